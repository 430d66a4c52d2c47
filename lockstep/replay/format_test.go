package replay

import (
	"bytes"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/lockstep"
)

// TestVersion2: a replay of version 2, whose configuration ends
// before MaxDelay, reads with the default bound.
func TestVersion2(t *testing.T) {
	c := lockstep.Config{Players: 2, Hz: 30, MaxDelay: time.Second}.WithDefaults()
	var cw codec.Writer
	if err := lockstep.WriteConfigVersion(&cw, c, 3); err != nil {
		t.Fatal(err)
	}
	var hw codec.Writer
	hw.WriteString("chain", maxGame)
	hw.WriteBytes(nil, maxParams)
	hw.WriteVarint(time.Unix(100, 0).UnixNano())
	hw.WriteBitString(cw.Bytes(), cw.Len()-16-5) // without the max delay's varint (1000: two bytes) and the substeps
	hw.WriteString("ann", maxName)
	hw.WriteString("bob", maxName)
	var ew codec.Writer
	ew.WriteUvarint(0)
	var rw Writer
	file := append([]byte(fileMagic), 2)
	file = rw.appendRecord(file, recHeader, hw.Bytes())
	file = rw.appendRecord(file, recEnd, ew.Bytes())
	rr, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := c
	want.MaxDelay = lockstep.DefaultMaxDelay
	if h := rr.Header(); !sameConfig(h.Config, want) || h.Players[1] != "bob" {
		t.Fatalf("header %+v", h)
	}
}

// TestVersion3: a replay of version 3, whose configuration ends before
// Strict, reads as a room that is not strict; a strict room cannot be
// written in it.
func TestVersion3(t *testing.T) {
	c := lockstep.Config{Players: 2, Hz: 30}.WithDefaults()
	var hw codec.Writer
	hw.WriteString("chain", maxGame)
	hw.WriteBytes(nil, maxParams)
	hw.WriteVarint(time.Unix(100, 0).UnixNano())
	if err := lockstep.WriteConfigVersion(&hw, c, 3); err != nil {
		t.Fatal(err)
	}
	hw.WriteString("ann", maxName)
	hw.WriteString("bob", maxName)
	var ew codec.Writer
	ew.WriteUvarint(0)
	var rw Writer
	file := append([]byte(fileMagic), 3)
	file = rw.appendRecord(file, recHeader, hw.Bytes())
	file = rw.appendRecord(file, recEnd, ew.Bytes())
	rr, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if h := rr.Header(); !sameConfig(h.Config, c) || h.Config.Strict || h.Players[1] != "bob" {
		t.Fatalf("header %+v", h)
	}
	c.Strict = true
	if err := lockstep.WriteConfigVersion(&hw, c, 3); err == nil {
		t.Fatal("a strict room written in version 3")
	}
}

// TestVersion1: a replay written before the header held the whole
// configuration still reads, the missing settings at their defaults.
func TestVersion1(t *testing.T) {
	var hw codec.Writer
	hw.WriteString("chain", maxGame)
	hw.WriteBytes(nil, maxParams)
	hw.WriteVarint(time.Unix(100, 0).UnixNano())
	hw.WriteUint(2-1, lockstep.MaxPlayers-1) // players
	hw.WriteUint(30, lockstep.MaxHz)
	hw.WriteUint(uint64(lockstep.FillRepeat), uint64(lockstep.FillAbsent))
	hw.WriteUint(uint64(lockstep.LateDrop), uint64(lockstep.LateNextFrame))
	hw.WriteUint(16, lockstep.MaxInputBytes)
	hw.WriteUint(2, lockstep.MaxInputsPerFrame)
	hw.WriteUint(3, lockstep.MaxRedundancy)
	hw.WriteUvarint(60)
	hw.WriteVarint(15)
	hw.WriteString("ann", maxName)
	hw.WriteString("bob", maxName)
	var ew codec.Writer
	ew.WriteUvarint(0)
	var rw Writer
	file := append([]byte(fileMagic), 1)
	file = rw.appendRecord(file, recHeader, hw.Bytes())
	file = rw.appendRecord(file, recEnd, ew.Bytes())

	rr, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	h := rr.Header()
	want := lockstep.Config{Players: 2, Hz: 30, Fill: lockstep.FillRepeat, InputBytes: 16, InputsPerFrame: 2, Redundancy: 3, MaxAhead: 60, HashEvery: 15}.WithDefaults()
	if h.Game != "chain" || !sameConfig(h.Config, want) || len(h.Players) != 2 || h.Players[1] != "bob" || !h.Start.Equal(time.Unix(100, 0)) {
		t.Fatalf("header %+v", h)
	}
	if _, err := rr.Next(); err != io.EOF {
		t.Fatalf("after the end record: %v, want io.EOF", err)
	}
}

// sameConfig reports whether two configurations are the same in every
// setting (those read from a file have no simulation).
func sameConfig(a, b lockstep.Config) bool { return reflect.DeepEqual(a, b) }
