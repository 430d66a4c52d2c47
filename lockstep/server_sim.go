package lockstep

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
)

// Snapshot bounds (SPEC.md section 7.4, sub-kind 5).
const (
	// MaxSnapshotBytes bounds the game's part of a snapshot
	// (Snapshotter.Snapshot); a larger one is not sent, and the player
	// is streamed the whole frame log instead.
	MaxSnapshotBytes = 4 << 20
	// SnapshotPartBytes is the most compressed snapshot bytes one
	// snapshot message carries.
	SnapshotPartBytes = 12 << 10
	maxSnapshotParts  = 256
	// maxSnapshotFill bounds the fill state ahead of the game's bytes: a
	// bit and an input per slot.
	maxSnapshotFill = MaxPlayers * (MaxInputBytes + 3)
)

// defaultSimSteps is the simulation's frame budget per Tick when
// Config.SimStepsPerTick is 0.
const defaultSimSteps = 8

// serverSim is a room's server-side simulation (Config.Simulation).
type serverSim struct {
	sim    Simulation
	snap   Snapshotter // sim, when it can snapshot
	frame  int         // frames run: 0 .. frame-1
	prev   [][]byte    // each slot's last real input, for FillRepeat
	rep    [][1][]byte // scratch for repeated inputs
	slots  []Slot      // scratch frame
	logic  []Frame     // scratch: the logic frames of a relay frame
	hashes []uint64    // the hash after frame k*HashEvery, by k
	behind bool        // reported as behind, not yet caught up

	cache      []byte // the last snapshot message payload (compressed)
	cacheFrame int
}

func newServerSim(cfg Config) (*serverSim, error) {
	sim := cfg.Simulation()
	if sim == nil {
		return nil, fmt.Errorf("%w: Config.Simulation returned nil", ErrConfig)
	}
	s := &serverSim{sim: sim, prev: make([][]byte, cfg.Players), rep: make([][1][]byte, cfg.Players), cacheFrame: -1}
	s.snap, _ = sim.(Snapshotter)
	return s, nil
}

// resolve returns f with the room's Fill applied to made-up slots, as a
// client's resolve does. The result is valid until the next call.
func (s *serverSim) resolve(f *Frame, fill Fill) Frame {
	s.slots = append(s.slots[:0], f.Slots...)
	applyFill(s.slots, s.prev, fill, s.rep) // stepped at once: reuse
	return Frame{Number: f.Number, Slots: s.slots}
}

// stepsPerTick returns how many frames the simulation may run in one
// tick, given Config.SimStepsPerTick.
func stepsPerTick(configured int) int {
	if configured == 0 {
		return defaultSimSteps
	}
	return configured
}

// step runs cut, the cut frame that is the simulation's next, with the
// room's Fill applied, and keeps the hash after it when one is due. ver,
// when not nil, takes each logic frame's events.
func (s *serverSim) step(cut *Frame, cfg *Config, ver *verifier, mem *arena) {
	// A relay frame is Substeps logic frames of the game.
	s.logic = cfg.Expand(s.logic[:0], s.resolve(cut, cfg.Fill))
	for _, f := range s.logic {
		s.sim.Step(f)
		if ver != nil {
			ver.takeSimEvents(s.frame, mem)
		}
	}
	if k := cfg.HashEvery; k > 0 && s.frame%k == 0 {
		s.hashes = append(s.hashes, s.sim.Hash())
	}
	s.frame++
}

// fellBehind takes the simulation's lag behind the cut after a tick in
// which it could run steps frames, and reports whether it just fell more
// than hz frames (a second) behind: it is reported again only after it
// caught up.
func (s *serverSim) fellBehind(lag, hz, steps int) bool {
	switch {
	case !s.behind && lag > hz:
		s.behind = true
		return true
	case s.behind && lag <= steps:
		s.behind = false
	}
	return false
}

// hash returns the simulation's hash after frame, for a frame it has run
// whose number is a multiple of every (Config.HashEvery).
func (s *serverSim) hash(frame, every int) (uint64, bool) {
	k := every
	if k < 0 || frame < 0 || frame%k != 0 || frame/k >= len(s.hashes) {
		return 0, false
	}
	return s.hashes[frame/k], true
}

// snapshot returns the compressed snapshot of the simulation as it is now
// (the state after frames 0 .. frame-1), cached for joins at the same
// frame, or false when it cannot be sent (no Snapshotter, too big). It
// counts snapshots taken and failed in stats.
func (s *serverSim) snapshot(stats *RoomStats) ([]byte, bool) {
	if s.snap == nil || s.frame == 0 {
		return nil, false
	}
	if s.cacheFrame == s.frame {
		return s.cache, true
	}
	game := s.snap.Snapshot()
	if len(game) > MaxSnapshotBytes {
		stats.SnapshotFailures++
		return nil, false
	}
	var w codec.Writer
	for _, in := range s.prev {
		w.WriteBool(in != nil)
		if in != nil {
			w.WriteBytes(in, MaxInputBytes)
		}
	}
	w.AlignByte()
	raw := append(w.Bytes(), game...)
	comp := codec.Compress(nil, raw)
	if len(comp) > maxSnapshotParts*SnapshotPartBytes {
		stats.SnapshotFailures++
		return nil, false
	}
	s.cache, s.cacheFrame = comp, s.frame
	stats.Snapshots++
	return comp, true
}

// snapshotPart is one message of a snapshot (lifeSnapshot): the snapshot
// is the state after frames 0 .. frame-1, data a piece of its compressed
// payload.
type snapshotPart payloadPart

func (d *snapshotPart) encode(w *codec.Writer) { snapshotSpec.encode(w, (*payloadPart)(d)) }

func decodeSnapshotPart(r *codec.Reader) (snapshotPart, error) {
	d, err := snapshotSpec.decode(r)
	return snapshotPart(d), err
}

// decodeSnapshotPayload decompresses a whole snapshot payload: the fill
// state of every slot, then the game's bytes.
func decodeSnapshotPayload(comp []byte, players int) (prev [][]byte, game []byte, err error) {
	raw, err := codec.Decompress(nil, comp, MaxSnapshotBytes+maxSnapshotFill)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: snapshot payload: %w", ErrMalformed, err)
	}
	r := codec.NewReader(raw)
	prev = make([][]byte, players)
	for i := range prev {
		if r.ReadBool() {
			prev[i] = r.ReadBytes(nil, MaxInputBytes)
		}
	}
	r.AlignByte()
	if err := r.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: snapshot fill state: %w", ErrMalformed, err)
	}
	game = raw[r.Pos()/8:]
	if len(game) > MaxSnapshotBytes {
		return nil, nil, fmt.Errorf("%w: snapshot of %d bytes", ErrMalformed, len(game))
	}
	return prev, game, nil
}
