package lockstep

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// MaxHz is the highest frame rate a room runs at.
const MaxHz = 120

// maxConfigUvint bounds the unbounded numbers of a config on the wire
// (MaxAhead, CatchUpBytes).
const maxConfigUvint = 1 << 30

// WriteConfig writes the part of a room's configuration that its clients
// and its replays need: everything but the server's simulation and how
// often the room steps it. The engine's welcome and a replay's header
// both carry it (SPEC.md, "Room configuration"). c should have its
// defaults applied.
func WriteConfig(w *codec.Writer, c Config) {
	w.WriteUint(uint64(c.Players-1), MaxPlayers-1)
	w.WriteUint(uint64(c.Hz), MaxHz)
	w.WriteUint(uint64(c.Fill), uint64(FillAbsent))
	w.WriteUint(uint64(c.Late), uint64(LateNextFrame))
	w.WriteUint(uint64(c.InputBytes), MaxInputBytes)
	w.WriteUint(uint64(c.InputsPerFrame), MaxInputsPerFrame)
	w.WriteUint(uint64(c.Redundancy), MaxRedundancy)
	w.WriteUvarint(uint64(c.MaxAhead))
	w.WriteUvarint(uint64(c.CatchUpBytes))
	w.WriteVarint(int64(c.HashEvery))
	w.WriteBool(c.DumpOnDesync)
	w.WriteBool(c.VerifyEvents)
	w.WriteBool(c.Authoritative)
	ms := int64(c.MaxDelay / time.Millisecond)
	if c.MaxDelay < 0 {
		ms = -1 // no bound
	}
	w.WriteVarint(ms)
	w.WriteUint(uint64(max(c.Substeps, 1)-1), MaxSubsteps-1)
	w.WriteBool(c.SubstepRepeat)
}

// ReadConfig reads a configuration WriteConfig wrote and checks it as
// Validate does: a config that decodes is one a Room and a Client accept.
func ReadConfig(r *codec.Reader) (Config, error) { return readConfig(r, true) }

// readConfig reads a configuration; without maxDelay, as replays of
// version 2 hold it (MaxDelay at its default, no substeps).
func readConfig(r *codec.Reader, maxDelay bool) (Config, error) {
	var c Config
	c.Players = int(r.ReadUint(MaxPlayers-1)) + 1
	c.Hz = int(r.ReadUint(MaxHz))
	c.Fill = Fill(r.ReadUint(uint64(FillAbsent)))
	c.Late = Late(r.ReadUint(uint64(LateNextFrame)))
	c.InputBytes = int(r.ReadUint(MaxInputBytes))
	c.InputsPerFrame = int(r.ReadUint(MaxInputsPerFrame))
	c.Redundancy = int(r.ReadUint(MaxRedundancy))
	ahead, catchUp := r.ReadUvarint(), r.ReadUvarint()
	every := r.ReadVarint()
	c.DumpOnDesync = r.ReadBool()
	c.VerifyEvents = r.ReadBool()
	c.Authoritative = r.ReadBool()
	c.MaxDelay = DefaultMaxDelay
	if maxDelay {
		ms := r.ReadVarint()
		if ms < -1 || ms == 0 || ms > int64(maxMaxDelay/time.Millisecond) {
			return c, fmt.Errorf("%w: max delay %d ms", ErrConfig, ms)
		}
		c.MaxDelay = time.Duration(ms) * time.Millisecond
		if ms == -1 {
			c.MaxDelay = -1
		}
		c.Substeps = int(r.ReadUint(MaxSubsteps-1)) + 1
		c.SubstepRepeat = r.ReadBool()
	} else {
		c.Substeps = 1
	}
	if err := r.Err(); err != nil {
		return c, fmt.Errorf("%w: room configuration: %w", ErrConfig, err)
	}
	if ahead > maxFrame || catchUp > maxConfigUvint || every < -1 || every > maxHashEvery {
		return c, fmt.Errorf("%w: max ahead %d, catch-up bytes %d, hash every %d", ErrConfig, ahead, catchUp, every)
	}
	c.MaxAhead, c.CatchUpBytes, c.HashEvery = int(ahead), int(catchUp), int(every)
	return c, c.Validate()
}
