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

// ConfigVersion is the newest format of a room's configuration on the
// wire (WriteConfig): 4 added strict lockstep.
const ConfigVersion = 4

// WriteConfig writes the part of a room's configuration that its clients
// and its replays need: everything but the server's simulation and how
// often the room steps it. The engine's welcome and a replay's header
// both carry it (SPEC.md, "Room configuration"). c should have its
// defaults applied.
func WriteConfig(w *codec.Writer, c Config) {
	writeConfig(w, c)
	w.WriteBool(c.Strict)
	if c.Strict {
		w.WriteUvarint(uint64(c.StrictWait / time.Millisecond))
	}
}

// WriteConfigVersion writes c in the format of an older version, for a
// reader of that version: 3 has no strict lockstep, and a strict room's
// configuration cannot be written in it.
func WriteConfigVersion(w *codec.Writer, c Config, version int) error {
	switch {
	case version == ConfigVersion:
		WriteConfig(w, c)
	case version == 3 && !c.Strict:
		writeConfig(w, c)
	default:
		return fmt.Errorf("%w: this room's configuration cannot be written in version %d", ErrConfig, version)
	}
	return nil
}

// writeConfig writes a configuration of version 3.
func writeConfig(w *codec.Writer, c Config) {
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
func ReadConfig(r *codec.Reader) (Config, error) { return ReadConfigVersion(r, ConfigVersion) }

// ReadConfigVersion reads a configuration as replay files of the given
// format version hold it in their header (SPEC.md section 7.5), and checks
// it as ReadConfig does. Version 4 is the current one, WriteConfig's.
// Version 3 ends before Strict. Version 2 ends before MaxDelay (read as
// DefaultMaxDelay, and no substeps). Version 1 holds only the settings up
// to Redundancy, then MaxAhead and HashEvery; the others take their
// defaults.
func ReadConfigVersion(r *codec.Reader, version int) (Config, error) {
	var c Config
	if version < 1 || version > ConfigVersion {
		return c, fmt.Errorf("%w: configuration of version %d", ErrConfig, version)
	}
	c.Players = int(r.ReadUint(MaxPlayers-1)) + 1
	c.Hz = int(r.ReadUint(MaxHz))
	c.Fill = Fill(r.ReadUint(uint64(FillAbsent)))
	c.Late = Late(r.ReadUint(uint64(LateNextFrame)))
	c.InputBytes = int(r.ReadUint(MaxInputBytes))
	c.InputsPerFrame = int(r.ReadUint(MaxInputsPerFrame))
	c.Redundancy = int(r.ReadUint(MaxRedundancy))
	ahead, catchUp := r.ReadUvarint(), uint64(0)
	if version >= 2 {
		catchUp = r.ReadUvarint()
	}
	every := r.ReadVarint()
	if version >= 2 {
		c.DumpOnDesync = r.ReadBool()
		c.VerifyEvents = r.ReadBool()
		c.Authoritative = r.ReadBool()
	}
	c.MaxDelay = DefaultMaxDelay
	if version >= 3 {
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
	c.StrictWait = DefaultStrictWait
	if version >= 4 && r.ReadBool() {
		c.Strict = true
		ms := r.ReadUvarint()
		if ms > uint64(maxStrictWait/time.Millisecond) {
			return c, fmt.Errorf("%w: strict wait %d ms", ErrConfig, ms)
		}
		c.StrictWait = time.Duration(ms) * time.Millisecond
	}
	if err := r.Err(); err != nil {
		return c, fmt.Errorf("%w: room configuration: %w", ErrConfig, err)
	}
	if ahead > maxFrame || catchUp > maxConfigUvint || every < -1 || every > maxHashEvery {
		return c, fmt.Errorf("%w: max ahead %d, catch-up bytes %d, hash every %d", ErrConfig, ahead, catchUp, every)
	}
	c.MaxAhead, c.CatchUpBytes, c.HashEvery = int(ahead), int(catchUp), int(every)
	if version == 1 {
		c = c.WithDefaults() // the catch-up pace
	}
	return c, c.Validate()
}
