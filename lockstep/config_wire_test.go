package lockstep

import (
	"errors"
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
