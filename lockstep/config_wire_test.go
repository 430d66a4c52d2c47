package lockstep

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// TestConfigWire: every setting a client or a replay needs survives the
// trip; the server-only ones (the simulation) do not travel.
func TestConfigWire(t *testing.T) {
	for _, c := range []Config{
		{},
		{Players: 1, Hz: 1, HashEvery: -1},
		{Players: MaxPlayers, Hz: MaxHz, Fill: FillAbsent, Late: LateNextFrame, InputBytes: MaxInputBytes,
			InputsPerFrame: MaxInputsPerFrame, Redundancy: MaxRedundancy, MaxAhead: 1 << 20, HashEvery: maxHashEvery,
			CatchUpBytes: 1 << 24, DumpOnDesync: true, VerifyEvents: true},
		{Players: 2, Authoritative: true, SimStepsPerTick: 3},
		{Players: 2, MaxDelay: -1},
		{Players: 2, MaxDelay: time.Millisecond},
		{Players: 2, MaxDelay: maxMaxDelay},
		{Players: 2, Substeps: MaxSubsteps, SubstepRepeat: true},
	} {
		c = c.WithDefaults()
		var w codec.Writer
		WriteConfig(&w, c)
		got, err := ReadConfig(codec.NewReader(w.Bytes()))
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		c.SimStepsPerTick = 0 // the server's own
		if got.key() != c.key() {
			t.Fatalf("decoded %+v, want %+v", got, c)
		}
	}
	// A config that does not validate does not decode.
	var w codec.Writer
	WriteConfig(&w, Config{Players: 2, Hz: 15, InputBytes: 8, InputsPerFrame: 1, MaxAhead: 0, HashEvery: 15, CatchUpBytes: 1 << 16})
	if _, err := ReadConfig(codec.NewReader(w.Bytes())); !errors.Is(err, ErrConfig) {
		t.Fatalf("max ahead 0: %v, want ErrConfig", err)
	}
}

// TestReplayVersion2: a replay of version 2, whose configuration ends
// before MaxDelay, reads with the default bound.
func TestReplayVersion2(t *testing.T) {
	c := Config{Players: 2, Hz: 30, MaxDelay: time.Second}.WithDefaults()
	var cw codec.Writer
	WriteConfig(&cw, c)
	var hw codec.Writer
	hw.WriteString("chain", maxReplayGame)
	hw.WriteBytes(nil, maxReplayParams)
	hw.WriteVarint(time.Unix(100, 0).UnixNano())
	hw.WriteBitString(cw.Bytes(), cw.Len()-16-5) // without the max delay's varint (1000: two bytes) and the substeps
	hw.WriteString("ann", maxReplayName)
	hw.WriteString("bob", maxReplayName)
	var ew codec.Writer
	ew.WriteUvarint(0)
	var rw ReplayWriter
	file := append([]byte(replayMagic), 2)
	file = rw.appendRecord(file, recHeader, hw.Bytes())
	file = rw.appendRecord(file, recEnd, ew.Bytes())
	rr, err := NewReplayReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := c
	want.MaxDelay = DefaultMaxDelay
	if h := rr.Header(); h.Config.key() != want.key() || h.Players[1] != "bob" {
		t.Fatalf("header %+v", h)
	}
}

// TestReplayVersion1: a replay written before the header held the whole
// configuration still reads, the missing settings at their defaults.
func TestReplayVersion1(t *testing.T) {
	var hw codec.Writer
	hw.WriteString("chain", maxReplayGame)
	hw.WriteBytes(nil, maxReplayParams)
	hw.WriteVarint(time.Unix(100, 0).UnixNano())
	hw.WriteUint(2-1, MaxPlayers-1) // players
	hw.WriteUint(30, MaxHz)
	hw.WriteUint(uint64(FillRepeat), uint64(FillAbsent))
	hw.WriteUint(uint64(LateDrop), uint64(LateNextFrame))
	hw.WriteUint(16, MaxInputBytes)
	hw.WriteUint(2, MaxInputsPerFrame)
	hw.WriteUint(3, MaxRedundancy)
	hw.WriteUvarint(60)
	hw.WriteVarint(15)
	hw.WriteString("ann", maxReplayName)
	hw.WriteString("bob", maxReplayName)
	var ew codec.Writer
	ew.WriteUvarint(0)
	var rw ReplayWriter
	file := append([]byte(replayMagic), 1)
	file = rw.appendRecord(file, recHeader, hw.Bytes())
	file = rw.appendRecord(file, recEnd, ew.Bytes())

	rr, err := NewReplayReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	h := rr.Header()
	want := Config{Players: 2, Hz: 30, Fill: FillRepeat, InputBytes: 16, InputsPerFrame: 2, Redundancy: 3, MaxAhead: 60, HashEvery: 15}.WithDefaults()
	if h.Game != "chain" || h.Config.key() != want.key() || len(h.Players) != 2 || h.Players[1] != "bob" || !h.Start.Equal(time.Unix(100, 0)) {
		t.Fatalf("header %+v", h)
	}
	if _, err := rr.Next(); err != io.EOF {
		t.Fatalf("after the end record: %v, want io.EOF", err)
	}
}

// FuzzReadConfig: a configuration that decodes validates, and encodes
// back to the same bytes' meaning.
func FuzzReadConfig(f *testing.F) {
	for _, c := range []Config{{}, {Players: 32, Hz: 120, HashEvery: -1, Authoritative: true}} {
		var w codec.Writer
		WriteConfig(&w, c.WithDefaults())
		f.Add(w.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadConfig(codec.NewReader(b))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded a config that does not validate: %v", err)
		}
		var w codec.Writer
		WriteConfig(&w, c)
		again, err := ReadConfig(codec.NewReader(w.Bytes()))
		if err != nil || again.key() != c.key() {
			t.Fatalf("round trip: %+v (%v), want %+v", again, err, c)
		}
	})
}
