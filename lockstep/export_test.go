package lockstep

// For the tests of package lockstep_test that record matches with a
// replay file's writer (record_test.go): lockstep/replay imports
// lockstep, so they cannot be in package lockstep; the matches are played
// here, with the package's internals.
var (
	RecordedMatch  = recordedMatch
	PlayColdFrames = playColdFrames
	RecordMidMatch = recordMidMatch
	SameInputs     = sameInputs
)

// NewChainSim returns the simulation the test matches' clients run.
func NewChainSim() Simulation { return &chainSim{} }
