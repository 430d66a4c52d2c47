package lockstep_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/locksteptest"
	"github.com/tongbu/tongbu/lockstep/replay"
	"github.com/tongbu/tongbu/transport/memnet"
)

// tagGame is a small deterministic game whose players interact: each
// walks left, right or stands (input byte 0, 1, 2), and a player who ends
// a frame next to another tags it, which sends the tagged one back. A
// wrong guess of another player's input changes the state, so rollbacks
// matter.
type tagGame struct {
	frame int64
	pos   []int64
	tags  []int64
	// Planted bugs, for SyncTest.
	leaky    bool    // tags are not saved
	floaty   bool    // speed is a float that SaveState rounds to float32
	speed    float64 //
	mapOrder bool    // players tag in map order
}

func newTagGame(players int) *tagGame {
	g := &tagGame{pos: make([]int64, players), tags: make([]int64, players), speed: 1.1}
	for i := range g.pos {
		g.pos[i] = int64(i * 3)
	}
	return g
}

func (g *tagGame) Step(f lockstep.Frame) {
	g.frame++
	for i, s := range f.Slots {
		if len(s.Inputs) == 0 || len(s.Inputs[len(s.Inputs)-1]) == 0 {
			continue
		}
		step := int64(s.Inputs[len(s.Inputs)-1][0]%3) - 1
		if g.floaty {
			g.speed = g.speed*1.0001 + 0.1
			step *= int64(g.speed)
		}
		g.pos[i] = max(-100, min(100, g.pos[i]+step))
	}
	order := make([]int, 0, len(g.pos))
	if g.mapOrder {
		m := map[int]bool{}
		for i := range g.pos {
			m[i] = true
		}
		for i := range m {
			order = append(order, i)
		}
	} else {
		for i := range g.pos {
			order = append(order, i)
		}
	}
	for _, i := range order {
		for j := range g.pos {
			if i != j && abs(g.pos[i]-g.pos[j]) <= 1 {
				g.tags[i]++
				if g.pos[j] >= g.pos[i] { // sent back, away from i
					g.pos[j] += 7
				} else {
					g.pos[j] -= 7
				}
				g.pos[j] = max(-100, min(100, g.pos[j]))
			}
		}
	}
}

func abs(x int64) int64 { return max(x, -x) }

func (g *tagGame) Hash() uint64 {
	h := fnv.New64a()
	b := binary.LittleEndian.AppendUint64(nil, uint64(g.frame))
	for i := range g.pos {
		b = binary.LittleEndian.AppendUint64(b, uint64(g.pos[i]))
		b = binary.LittleEndian.AppendUint64(b, uint64(g.tags[i]))
	}
	if g.floaty {
		b = binary.LittleEndian.AppendUint64(b, uint64(g.speed*1e9))
	}
	h.Write(b)
	return h.Sum64()
}

func (g *tagGame) SaveState(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(g.frame))
	for i := range g.pos {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(g.pos[i]))
		if !g.leaky {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(g.tags[i]))
		}
	}
	if g.floaty {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(float32(g.speed)*1e6)))
	}
	return dst
}

func (g *tagGame) LoadState(b []byte) error {
	per := 16
	if g.leaky {
		per = 8
	}
	want := 8 + per*len(g.pos)
	if g.floaty {
		want += 4
	}
	if len(b) != want {
		return errors.New("tag game: bad state")
	}
	g.frame = int64(binary.LittleEndian.Uint64(b))
	b = b[8:]
	for i := range g.pos {
		g.pos[i] = int64(binary.LittleEndian.Uint64(b))
		if !g.leaky {
			g.tags[i] = int64(binary.LittleEndian.Uint64(b[8:]))
		}
		b = b[per:]
	}
	if g.floaty {
		g.speed = float64(float32(int32(binary.LittleEndian.Uint32(b)))) / 1e6
	}
	return nil
}

// wander changes a player's stick now and then.
func wander(slot int, g lockstep.RollbackGame, rng *rand.Rand) []byte {
	tg := g.(*tagGame)
	if rng.IntN(12) == 0 || tg.frame == 0 {
		return []byte{byte(rng.IntN(3))}
	}
	return nil
}

// stick keeps a player's controller state between ticks, as a pad does.
func stick() func(int, lockstep.RollbackGame, *rand.Rand) []byte {
	held := map[int][]byte{}
	return func(slot int, g lockstep.RollbackGame, rng *rand.Rand) []byte {
		if in := wander(slot, g, rng); in != nil {
			held[slot] = in
		}
		if held[slot] == nil {
			held[slot] = []byte{1}
		}
		return held[slot]
	}
}

func duelLink() memnet.LinkConfig {
	return memnet.LinkConfig{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.02}
}

func rollbackMatch(t *testing.T, o locksteptest.RollbackOptions) locksteptest.RollbackResult {
	t.Helper()
	if o.Config.Players == 0 {
		o.Config = lockstep.Config{Players: 2, Hz: 60, Fill: lockstep.FillRepeat, Late: lockstep.LateNextFrame, InputBytes: 1, HashEvery: 30}
	}
	o.NewGame = func() lockstep.RollbackGame { return newTagGame(o.Config.Players) }
	if o.Input == nil {
		o.Input = stick()
	}
	if o.Duration == 0 {
		o.Duration = time.Minute
	}
	r, err := locksteptest.RunRollback(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRollbackMatch plays a minute at 60 Hz through the real room over a
// 50 ms ± 10 ms link with 2% loss: the player's own input shows in the
// next frame (99% within a frame of the press), the rollbacks stay within the bound, the confirmed hashes
// agree with the room's own run of the game, and the plain client beside
// it sees its input a round trip and more later.
func TestRollbackMatch(t *testing.T) {
	link := duelLink()
	r := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 1})
	plain := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 1, Plain: true})
	own := locksteptest.Percentile(r.OwnInputMs, 0.99)
	worst := locksteptest.Percentile(r.OwnInputMs, 1)
	plainOwn := locksteptest.Percentile(plain.OwnInputMs, 0.5)
	depth := locksteptest.Percentile(r.Depths, 0.99)
	t.Logf("frames %d, own input p99 %.1f ms, max %.1f (plain median %.1f ms), %d rollbacks, depth p99 %d, stalls %d, checked %d, stats %+v",
		r.Frames, own, worst, plainOwn, len(r.Depths), depth, r.Stalls, r.Checked, r.Stats)
	switch {
	case len(r.OwnInputMs) < 100:
		t.Fatalf("only %d input changes measured", len(r.OwnInputMs))
	case own > 1000.0/60+0.01 || worst > 2000.0/60:
		t.Errorf("own input took %.1f ms (p99), %.1f ms (max) to show, want at most a frame, and two when the clock slows", own, worst)
	case plainOwn < 80:
		t.Errorf("the plain client showed its input in %.1f ms: a round trip is 100 ms", plainOwn)
	case len(r.Depths) < 100:
		t.Errorf("only %d rollbacks: the prediction was never tested", len(r.Depths))
	case depth > 10:
		t.Errorf("rollback depth p99 %d frames, want at most 10", depth)
	case r.Desyncs != 0 || plain.Desyncs != 0:
		t.Errorf("desyncs: %d predicted, %d plain", r.Desyncs, plain.Desyncs)
	case r.Compared < r.Checked || r.Differed != 0:
		t.Errorf("the sessions' confirmed hashes: %d compared with the room's, %d differed", r.Compared, r.Differed)
	case r.Checked < r.Frames/30-10:
		t.Errorf("the room compared %d hash frames of %d", r.Checked, r.Frames/30)
	case r.Stalls > 1:
		t.Errorf("%d stalls in a minute", r.Stalls)
	}
}

// TestRollbackInputDelay: two frames of input delay make rollbacks
// shallower by about two frames, and own input shows two frames later.
func TestRollbackInputDelay(t *testing.T) {
	link := duelLink()
	r0 := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 2, Duration: 30 * time.Second})
	r2 := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 2, Duration: 30 * time.Second,
		Rollback: lockstep.RollbackConfig{InputDelay: 2}})
	d0, d2 := locksteptest.Percentile(r0.Depths, 0.5), locksteptest.Percentile(r2.Depths, 0.5)
	o2 := locksteptest.Percentile(r2.OwnInputMs, 0.5)
	t.Logf("median depth %d at delay 0, %d at delay 2; own input median %.1f ms at delay 2", d0, d2, o2)
	if d2 > d0-1 || o2 < 2*1000.0/60-1 || r2.Desyncs != 0 {
		t.Errorf("delay 2: median depth %d (delay 0: %d), own input %.1f ms, %d desyncs", d2, d0, o2, r2.Desyncs)
	}
}

// TestRollbackLateInputsRollBack: under a jittery uplink some of the
// player's own inputs reach the room after their frame was cut, and the
// room drops them; the frames the room cut say so, and the session rolls
// its own input back too, with no desync.
func TestRollbackLateInputsRollBack(t *testing.T) {
	up := memnet.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 35 * time.Millisecond, Loss: 0.05}
	down := duelLink()
	cfg := lockstep.Config{Players: 2, Hz: 60, Fill: lockstep.FillRepeat, Late: lockstep.LateDrop, InputBytes: 1, HashEvery: 30}
	r := rollbackMatch(t, locksteptest.RollbackOptions{Config: cfg, Up: up, Down: down, Seed: 3, Duration: 30 * time.Second})
	t.Logf("late drops %d, rollbacks %d, desyncs %d", r.LateDrops, len(r.Depths), r.Desyncs)
	if r.LateDrops == 0 || r.Desyncs != 0 {
		t.Errorf("late drops %d, desyncs %d: want some and none", r.LateDrops, r.Desyncs)
	}
}

// TestRollbackStallsAtMaxPrediction: when a player's downlink dies for a
// second, its present stops MaxPrediction frames past the newest confirmed
// frame instead of running on, then catches up with no desync.
func TestRollbackStallsAtMaxPrediction(t *testing.T) {
	link := duelLink()
	out := &locksteptest.Outage{Slot: 1, From: 10 * time.Second, For: time.Second}
	r := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 4, Duration: 20 * time.Second, Cut: out})
	t.Logf("stalls %d for %v, max depth %+v", r.Stalls, r.Stalled, r.Stats[1].MaxDepth)
	if r.Stats[1].Stalls < 1 || r.Stats[1].Stalled < 800*time.Millisecond || r.Desyncs != 0 {
		t.Errorf("player 1: %+v, desyncs %d: want a stall of about a second", r.Stats[1], r.Desyncs)
	}
	if r.Stats[1].MaxDepth > 10 {
		t.Errorf("rolled back %d frames, beyond MaxPrediction 10", r.Stats[1].MaxDepth)
	}
}

// TestRollbackRejoin: a player who drops out and comes back with a fresh
// client catches up through the room's log, then predicts, and its
// confirmed hashes agree with the room's.
func TestRollbackRejoin(t *testing.T) {
	link := duelLink()
	rj := &locksteptest.Outage{Slot: 1, From: 8 * time.Second, For: 3 * time.Second}
	r := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 6, Duration: 30 * time.Second, Rejoin: rj})
	st := r.Stats[1]
	t.Logf("rejoined player: %+v; checked %d, desyncs %d", st, r.Checked, r.Desyncs)
	if st.Predicted < 1000 || st.Rollbacks == 0 || r.Desyncs != 0 {
		t.Errorf("rejoined player %+v, desyncs %d: want it predicting again, with no desync", st, r.Desyncs)
	}
}

// TestRollbackRejoinOnLossyDownlink: a rejoining player whose newest
// frames arrive before the room's catch-up stream (30% downlink loss
// delays the reliable stream) has predicted a few frames from frame 0
// when the stream begins: the session rolls them back before it runs
// the room's frames, and its hashes agree with the room's. (Before, it
// ran the log on top of its guesses: these seeds desynced.)
func TestRollbackRejoinOnLossyDownlink(t *testing.T) {
	up := memnet.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 35 * time.Millisecond, Loss: 0.05}
	down := memnet.LinkConfig{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.3}
	for _, seed := range []uint64{16, 18, 22, 24, 29} {
		rj := &locksteptest.Outage{Slot: 1, From: 8 * time.Second, For: 3 * time.Second}
		r := rollbackMatch(t, locksteptest.RollbackOptions{Up: up, Down: down, Seed: seed, Duration: 15 * time.Second, Rejoin: rj})
		if r.Desyncs != 0 || r.Differed != 0 || r.Compared < 20 {
			t.Errorf("seed %d: %d desyncs; %d confirmed hashes compared, %d differed", seed, r.Desyncs, r.Compared, r.Differed)
		}
	}
}

// TestRollbackPredictor: a game's own predictor is asked for the other
// players' slots; a poor one (the stick always centred) costs rollbacks,
// never a desync.
func TestRollbackPredictor(t *testing.T) {
	link := duelLink()
	calls := 0
	centred := func(slot int, last lockstep.Slot, frame int) lockstep.Slot {
		calls++
		return lockstep.Slot{Inputs: [][]byte{{1}}}
	}
	def := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 8, Duration: 20 * time.Second})
	own := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 8, Duration: 20 * time.Second,
		Rollback: lockstep.RollbackConfig{Predict: centred}})
	t.Logf("rollbacks: %d repeating the last input, %d guessing a centred stick (%d guesses)", len(def.Depths), len(own.Depths), calls)
	if calls == 0 || len(own.Depths) <= len(def.Depths) || own.Desyncs != 0 || own.Differed != 0 {
		t.Errorf("predictor called %d times; rollbacks %d vs %d; desyncs %d", calls, len(own.Depths), len(def.Depths), own.Desyncs)
	}
}

// TestRollbackReplayAndSpectator: a match in the prediction mode records
// a replay that verifies against the game, and a spectator with the plain
// client watches it and reaches the players' confirmed states.
func TestRollbackReplayAndSpectator(t *testing.T) {
	link := duelLink()
	var file bytes.Buffer
	r := rollbackMatch(t, locksteptest.RollbackOptions{Up: link, Down: link, Seed: 7, Duration: 20 * time.Second,
		Replay: &file, Game: "tag", Spectator: true})
	if r.Watched < r.Frames/30-5 || r.WatchDiff != 0 || r.Desyncs != 0 {
		t.Fatalf("spectator: %d hash frames watched of %d, %d differed; desyncs %d", r.Watched, r.Frames/30, r.WatchDiff, r.Desyncs)
	}
	rr, err := replay.NewReader(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Verify(rr, newTagGame(2))
	if err != nil || res.Frames != r.Frames || res.Checked < r.Frames/30-5 || res.Mismatch != 0 {
		t.Fatalf("replay: %+v, %v (%d frames cut)", res, err, r.Frames)
	}
	t.Logf("replay of %d bytes: %+v; spectator compared %d hash frames", file.Len(), res, r.Watched)
}

// TestSyncTest finds the planted nondeterminism of a game within a second
// of play at 60 Hz, naming the frame, and passes a deterministic game.
func TestSyncTest(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  func(g *tagGame)
	}{
		{"deterministic", func(*tagGame) {}},
		{"state left out of SaveState", func(g *tagGame) { g.leaky = true }},
		{"a float rounded on the way through SaveState", func(g *tagGame) { g.floaty = true }},
		{"players tag in map order", func(g *tagGame) { g.mapOrder = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := lockstep.Config{Players: 3, Hz: 60, Fill: lockstep.FillRepeat}
			st, err := lockstep.NewSyncTest(cfg, 7)
			if err != nil {
				t.Fatal(err)
			}
			g := newTagGame(3)
			tc.bug(g)
			rng := rand.New(rand.NewPCG(5, 5))
			var found error
			for n := range 60 {
				in := make([][]byte, 3)
				for i := range in {
					if rng.IntN(4) > 0 {
						in[i] = []byte{byte(rng.IntN(3))}
					}
				}
				if n < 5 {
					in[0] = []byte{2} // 0 walks into 1, so tags happen
				}
				reqs, err := st.Update(in)
				if err == nil {
					err = st.Run(g, reqs)
				}
				if err != nil {
					found = err
					break
				}
			}
			var se *lockstep.SyncTestError
			switch {
			case tc.name == "deterministic" && found != nil:
				t.Fatalf("a deterministic game failed: %v", found)
			case tc.name != "deterministic" && !errors.As(found, &se):
				t.Fatalf("not found within a second: %v", found)
			case se != nil:
				t.Logf("%v", se)
				if se.Frame < 0 || se.Frame >= 60 || se.First == se.Again {
					t.Errorf("error names frame %d: %+v", se.Frame, se)
				}
			}
		})
	}
}

// TestSyncTestNoAllocs: the session's ring is warm after a few frames;
// from then on, a frame allocates nothing in the session.
func TestSyncTestNoAllocs(t *testing.T) {
	st, err := lockstep.NewSyncTest(lockstep.Config{Players: 2, Hz: 60}, 8)
	if err != nil {
		t.Fatal(err)
	}
	g := newTagGame(2)
	in := [][]byte{{1}, {2}}
	run := func() {
		reqs, err := st.Update(in)
		if err != nil {
			t.Fatal(err)
		}
		for i := range reqs { // the requests without the game's own allocations
			if q := &reqs[i]; q.Kind == lockstep.RequestSave {
				q.State.Data = g.SaveState(q.State.Data[:0])
			} else if q.Kind == lockstep.RequestAdvance {
				st.ReportHash(q.Frame.Number, uint64(q.Frame.Number))
			}
		}
	}
	for range 20 {
		run()
	}
	if a := testing.AllocsPerRun(100, run); a > 0 {
		t.Errorf("%.1f allocations a frame", a)
	}
}

func TestRollbackConfig(t *testing.T) {
	cfg := lockstep.Config{Players: 2, Hz: 60}
	c, err := lockstep.NewClient(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []lockstep.RollbackConfig{{InputDelay: -1}, {InputDelay: 31}, {MaxPrediction: 121}, {MaxPrediction: 100, InputDelay: 25}} {
		if _, err := lockstep.NewRollback(c, bad); !errors.Is(err, lockstep.ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", bad, err)
		}
	}
	sub, _ := lockstep.NewClient(lockstep.Config{Players: 2, Hz: 15, Substeps: 4}, 0)
	if _, err := lockstep.NewRollback(sub, lockstep.RollbackConfig{}); !errors.Is(err, lockstep.ErrConfig) {
		t.Errorf("substeps: %v, want ErrConfig", err)
	}
	spec, _ := lockstep.NewSpectator(cfg)
	if _, err := lockstep.NewRollback(spec, lockstep.RollbackConfig{}); !errors.Is(err, lockstep.ErrSpectator) {
		t.Errorf("spectator: %v", err)
	}
}
