package lockstep

// Simulation is a game's deterministic simulation as lockstep runs it:
// every client steps it through the same frames and must reach the same
// state, bit for bit (use lockstep/fixed, never floats). Replays are
// verified through it (lockstep/replay.Verify), and its hash is what
// clients report for desync detection.
type Simulation interface {
	// Step runs one frame: every player's inputs for it, in slot order
	// (a made-up slot as the room's Fill says).
	Step(f Frame)
	// Hash returns a hash of the state that must agree between clients.
	Hash() uint64
}

// Snapshotter is a Simulation whose state can be saved and restored: a
// room running one (Config.Simulation) catches a rejoining player up with
// a snapshot and the frames after it instead of the whole frame log, and
// the client restores its game from the snapshot (Step.Snapshot).
// Restore(Snapshot()) must give a simulation that steps and hashes the
// same as the original, on every platform.
type Snapshotter interface {
	Simulation
	// Snapshot returns the whole state, at most MaxSnapshotBytes.
	Snapshot() []byte
	// Restore replaces the state with a snapshot; it returns an error, and
	// leaves the state as it was, for bytes that are not a snapshot.
	Restore(snapshot []byte) error
}
