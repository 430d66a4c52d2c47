package lockstep

import (
	"fmt"
)

// SyncTest is a development check for a RollbackGame, with no network:
// every frame it runs the game forward, then loads the state from Check
// frames back and runs those frames again, and compares the hash after
// each frame's first run with the hash after the second. A game whose
// Step reads anything SaveState left out, iterates a map, or rounds a
// float differently on the way through SaveState fails within Check
// frames of the first frame that shows it, and the error names the frame.
// Run it in a test with the game's own inputs or a bot's.
type SyncTest struct {
	cfg    Config
	check  int
	frame  int       // the next frame to run for the first time
	states []State   // the state before each frame, by number % len
	first  []uint64  // each frame's hash after its first run, by number % len
	frames []rbRec   // each frame's inputs, by number % len
	prev   [][]byte  // each slot's last real input, for FillRepeat
	want   []syncRun // the hashes this tick's requests report, in order
	got    int
	from   int // the frame this tick's second run starts from
	reqs   []Request
	err    error
}

type syncRun struct {
	frame int
	again bool
}

// SyncTestError names the first frame whose second run reached another
// state than its first.
type SyncTestError struct {
	Frame        int    // the frame
	First, Again uint64 // the hashes after its first and second runs
	From         int    // the frame whose saved state the second run started from
}

func (e *SyncTestError) Error() string {
	return fmt.Sprintf("lockstep: sync test: frame %d hashed %#x when first run and %#x when run again from the state saved before frame %d: "+
		"the game's Step is not deterministic, or SaveState leaves out state it reads", e.Frame, e.First, e.Again, e.From)
}

// NewSyncTest returns a sync test of a game for a room with configuration
// cfg (Players and Fill matter), rolling back check frames (1 to
// MaxMaxPrediction) on every frame.
func NewSyncTest(cfg Config, check int) (*SyncTest, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if check < 1 || check > MaxMaxPrediction {
		return nil, fmt.Errorf("%w: sync test of %d frames, want 1 to %d", ErrConfig, check, MaxMaxPrediction)
	}
	n := check + 2
	s := &SyncTest{cfg: cfg, check: check, states: make([]State, n), first: make([]uint64, n),
		frames: make([]rbRec, n), prev: make([][]byte, cfg.Players)}
	for i := range s.frames {
		s.frames[i] = rbRec{frame: Frame{Slots: make([]Slot, cfg.Players)}, one: make([][1][]byte, cfg.Players), buf: make([][]byte, cfg.Players)}
	}
	return s, nil
}

// Update takes one frame's inputs, one per player (nil: the player sent
// none, and the room's Fill makes it up), and returns the requests that
// run it and check it. It returns the first error found so far.
func (s *SyncTest) Update(inputs [][]byte) ([]Request, error) {
	if s.err != nil {
		return nil, s.err
	}
	if len(inputs) != s.cfg.Players {
		return nil, fmt.Errorf("%w: %d inputs for %d players", ErrSlot, len(inputs), s.cfg.Players)
	}
	n := s.frame
	s.frame++
	rec := &s.frames[n%len(s.frames)]
	rec.frame.Number = n
	for i, in := range inputs {
		d := &rec.frame.Slots[i]
		d.MadeUp, d.Inputs = in == nil, nil
		if in != nil {
			s.prev[i] = append(s.prev[i][:0], in...)
		} else if s.cfg.Fill != FillRepeat || s.prev[i] == nil {
			continue
		}
		// A copy: the frame is run again after later frames reuse buffers.
		rec.buf[i] = append(rec.buf[i][:0], s.prev[i]...)
		rec.one[i][0] = rec.buf[i]
		d.Inputs = rec.one[i][:]
	}
	s.reqs, s.want, s.got = s.reqs[:0], s.want[:0], 0
	s.run(n, false)
	if back := min(s.check, n+1); back > 0 {
		from := n + 1 - back
		s.from = from
		s.reqs = append(s.reqs, Request{Kind: RequestLoad, State: &s.states[from%len(s.states)]})
		for k := from; k <= n; k++ {
			s.run(k, true)
		}
	}
	return s.reqs, nil
}

// run asks for frame k to be run, after saving the state before it.
func (s *SyncTest) run(k int, again bool) {
	if !again { // the states of the first run are the reference
		st := &s.states[k%len(s.states)]
		st.Frame = k
		s.reqs = append(s.reqs, Request{Kind: RequestSave, State: st})
	}
	s.reqs = append(s.reqs, Request{Kind: RequestAdvance, Frame: s.frames[k%len(s.frames)].frame, Confirmed: true, Hash: true})
	s.want = append(s.want, syncRun{frame: k, again: again})
}

// ReportHash hands back the game's hash after a frame, as asked.
func (s *SyncTest) ReportHash(frame int, hash uint64) {
	if s.got >= len(s.want) || s.want[s.got].frame != frame {
		return
	}
	w := s.want[s.got]
	s.got++
	i := frame % len(s.first)
	if !w.again {
		s.first[i] = hash
		return
	}
	if s.err == nil && hash != s.first[i] {
		s.err = &SyncTestError{Frame: frame, First: s.first[i], Again: hash, From: s.from}
	}
}

// Run carries out the requests on g and returns the first mismatch.
func (s *SyncTest) Run(g RollbackGame, reqs []Request) error {
	if err := runRequests(g, reqs, s.ReportHash); err != nil {
		return err
	}
	return s.err
}

// Err returns the first mismatch found, or nil.
func (s *SyncTest) Err() error { return s.err }
