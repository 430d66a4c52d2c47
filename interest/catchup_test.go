package interest

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// ent is an entity's whole logic, as a world packet tells it.
type ent struct {
	id   ID
	kind Kind
	lg   Logic
}

// logicPacket encodes a world packet with the frame in full and the whole
// logic of each entity, stamped with that frame.
func logicPacket(t *testing.T, l *layout, seq, frame int, ents ...ent) []byte {
	t.Helper()
	var w codec.Writer
	(&downHeader{seq: seq & seqMask, full: true, frame: frame}).encode(&w)
	for _, e := range ents {
		writeTag(&w, tagLogic)
		l.writeID(&w, e.id)
		l.writeLogic(&w, e.kind, &e.lg, 0, nil)
		w.WriteBits(0, epochBits) // the move number
	}
	if w.Err() != nil {
		t.Fatalf("encode: %v", w.Err())
	}
	return append([]byte(nil), w.Bytes()...)
}

// syncedClient returns a client for player 1 that has heard of the given
// entities (player 1's own among them) at frame, at time start.
func syncedClient(t *testing.T, cfg Config, start time.Time, frame int, ents ...ent) *Client {
	t.Helper()
	c, err := NewClient(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Deliver(start, logicPacket(t, &c.lay, 0, frame, ents...)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Self(); !ok || c.Frame() != frame {
		t.Fatalf("the client did not sync: frame %d", c.Frame())
	}
	return c
}

// catchUpFrames is the longest jump Client.stepTo steps frame by frame.
func catchUpFrames(cfg Config) int { return catchUpGraces * graceFrames(cfg.WithDefaults()) }

// sameView requires two clients to agree on their own position and on
// every entity they know, and on which they know.
func sameView(t *testing.T, what string, got, want *Client) {
	t.Helper()
	if got.Frame() != want.Frame() {
		t.Errorf("%s: frame %d, want %d", what, got.Frame(), want.Frame())
	}
	gm, _ := got.Self()
	wm, _ := want.Self()
	if gm.Pos != wm.Pos {
		t.Errorf("%s: the player at %v, want %v", what, gm.Pos, wm.Pos)
	}
	gk, wk := got.Known(nil), want.Known(nil)
	if !slices.Equal(gk, wk) {
		t.Errorf("%s: knows %v, want %v", what, gk, wk)
	}
	for _, id := range gk {
		g, _ := got.Entity(id)
		w, ok := want.Entity(id)
		if ok && g.Logic.Pos != w.Logic.Pos {
			t.Errorf("%s: entity %d at %v, want %v", what, id, g.Logic.Pos, w.Logic.Pos)
		}
	}
}

// inRangeOf returns the IDs of the entities in the 3x3 range around the
// client's player, sorted.
func inRangeOf(c *Client) []ID {
	var ids []ID
	c.Each(func(id ID, v View) {
		if c.inRange(v.Logic.Pos) {
			ids = append(ids, id)
		}
	})
	slices.Sort(ids)
	return ids
}

// TestHostileFrameAhead: a world packet whose full frame jumps billions of
// frames ahead of a synced client is caught up in bulk, not frame by frame
// (which would hang the client on one packet), and leaves the client
// consistent: at the header's frame, everything at its path's end.
func TestHostileFrameAhead(t *testing.T) {
	if bits.UintSize < 64 {
		t.Skip("frames past 2^31 do not fit an int")
	}
	cfg := testConfig()
	start := time.Unix(0, 0)
	ents := []ent{
		{1, Player, Logic{Pos: Vec{5500, 5500}, Dest: Vec{6300, 5900}, Speed: 3, Life: 100}},
		{2, NPC, Logic{Pos: Vec{5200, 5000}, Dest: Vec{6900, 6400}, Speed: 1, Life: 100}},  // stays in range
		{3, NPC, Logic{Pos: Vec{6900, 5500}, Dest: Vec{9000, 5600}, Speed: 64, Life: 100}}, // leaves
		{4, NPC, Logic{Pos: Vec{5300, 6100}, Dest: Vec{5300, 6100}, Life: 100}},            // stands
	}
	for _, frame := range []uint64{1 << 31, math.MaxUint32} {
		c := syncedClient(t, cfg, start, 10, ents...)
		c.Advance(start.Add(3 * cfg.WithDefaults().Period())) // some stepping first
		hostile := logicPacket(t, &c.lay, 1, int(frame))
		if err := c.Deliver(start, hostile); err != nil {
			t.Fatalf("frame %d: %v", frame, err)
		}
		if c.Frame() != int(frame) {
			t.Errorf("frame %d: the client is at frame %d", frame, c.Frame())
		}
		if me, _ := c.Self(); me.Pos != me.Dest {
			t.Errorf("frame %d: the player at %v, not at its path's end %v", frame, me.Pos, me.Dest)
		}
		for _, e := range ents[1:] {
			v, ok := c.Entity(e.id)
			if !ok {
				// Even the one that left: it was in range before the gap,
				// so it is doomed at its end and kept for a grace.
				t.Errorf("frame %d: entity %d dropped at once", frame, e.id)
				continue
			}
			if v.Logic.Pos != e.lg.Dest {
				t.Errorf("frame %d: entity %d at %v, not at its path's end %v", frame, e.id, v.Logic.Pos, e.lg.Dest)
			}
		}
		// The client plays on: the one that left is dropped after the
		// grace, the others kept.
		c.Advance(start.Add(time.Duration(graceFrames(cfg.WithDefaults())+1) * cfg.WithDefaults().Period()))
		_ = c.Packet(start)
		if got, want := c.Known(nil), []ID{2, 4}; !slices.Equal(got, want) {
			t.Errorf("frame %d: a grace after the jump the client knows %v, want %v", frame, got, want)
		}
	}
}

// TestLongPause: a client not advanced for 10 minutes (a background tab)
// steps once, in bulk, to where stepping frame by frame would have put it:
// the player and every entity where StepN puts them, what was doomed
// before the pause dropped at once, and what is out of range after it
// dropped after the grace, leaving the same known set as a client
// advanced every frame.
func TestLongPause(t *testing.T) {
	cfg := testConfig()
	period := cfg.WithDefaults().Period()
	start := time.Unix(0, 0)
	const pause = 10 * time.Minute
	frames := int(pause / period)
	cases := []struct {
		name string
		ents []ent
		// move is the player's own move after syncing, of any length (a
		// Client.Move, not a logic message bounded by MaxMove).
		move *Logic
		// doomed: out of range from the start, so doomed before the pause
		doomed []ID
	}{
		{
			name: "player walks across the map",
			ents: []ent{
				{1, Player, Logic{Pos: Vec{1000, 1500}, Dest: Vec{1000, 1500}, Life: 100}},
				{2, NPC, Logic{Pos: Vec{1300, 1900}, Dest: Vec{1300, 1900}, Life: 100}},
				{3, NPC, Logic{Pos: Vec{1800, 1000}, Dest: Vec{5800, 1000}, Speed: 3, Life: 100}},
				{4, NPC, Logic{Pos: Vec{500, 2500}, Dest: Vec{500, 2500}, Life: 100}},
				{5, NPC, Logic{Pos: Vec{9500, 9500}, Dest: Vec{9500, 9500}, Life: 100}},
			},
			// 10500 frames at speed 1: still walking after the pause.
			move:   &Logic{Dest: Vec{11500, 1500}, Speed: 1},
			doomed: []ID{5},
		},
		{
			name: "player stands",
			ents: []ent{
				{1, Player, Logic{Pos: Vec{6000, 6000}, Dest: Vec{6000, 6000}, Life: 100}},
				{2, NPC, Logic{Pos: Vec{6200, 5100}, Dest: Vec{6200, 5100}, Life: 100}},           // stands in range
				{3, NPC, Logic{Pos: Vec{5200, 5300}, Dest: Vec{6900, 6900}, Speed: 3, Life: 100}}, // walks in range
				{4, NPC, Logic{Pos: Vec{6900, 6000}, Dest: Vec{9000, 6000}, Speed: 5, Life: 100}}, // walks out
				{5, NPC, Logic{Pos: Vec{9500, 9500}, Dest: Vec{9500, 9500}, Life: 100}},           // out of range
			},
			doomed: []ID{5},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bulk := syncedClient(t, cfg, start, 100, tc.ents...)
			each := syncedClient(t, cfg, start, 100, tc.ents...)
			for _, c := range []*Client{bulk, each} {
				if tc.move != nil {
					if err := c.Move(tc.move.Dest, tc.move.Speed); err != nil {
						t.Fatal(err)
					}
				}
				c.Advance(start.Add(period)) // one frame: the out-of-range ones are doomed
			}
			for _, id := range tc.doomed {
				if bulk.ents[id] == nil || bulk.ents[id].doom == 0 {
					t.Fatalf("entity %d is not doomed before the pause", id)
				}
			}
			me0, _ := bulk.Self()
			then := map[ID]Logic{}
			bulk.Each(func(id ID, v View) { then[id] = v.Logic })

			end := start.Add(period + pause)
			for f := 2; f <= frames+1; f++ {
				each.Advance(start.Add(time.Duration(f) * period))
			}
			bulk.Advance(end)

			if bulk.Frame() != 100+1+frames {
				t.Fatalf("after the pause the client is at frame %d, want %d", bulk.Frame(), 100+1+frames)
			}
			me, _ := bulk.Self()
			if want := StepN(me0.Pos, me0.Dest, me0.Speed, frames); me.Pos != want {
				t.Errorf("the player at %v, want %v", me.Pos, want)
			}
			if tc.move != nil && me.Pos == me.Dest {
				t.Errorf("the player's walk ended in the pause: the test's geometry is off")
			}
			bulk.Each(func(id ID, v View) {
				lg := then[id]
				if want := StepN(lg.Pos, lg.Dest, lg.Speed, frames); v.Logic.Pos != want {
					t.Errorf("entity %d at %v, want %v", id, v.Logic.Pos, want)
				}
			})
			for _, id := range tc.doomed {
				if _, ok := bulk.Entity(id); ok {
					t.Errorf("entity %d, doomed before the pause, is still known after it", id)
				}
			}
			// Once the grace has run, the same known set as frame by frame:
			// exactly the entities in range.
			for f := 1; f <= graceFrames(cfg.WithDefaults())+1; f++ {
				now := end.Add(time.Duration(f) * period)
				bulk.Advance(now)
				each.Advance(now)
			}
			sameView(t, "a grace after the pause", bulk, each)
			if got, want := bulk.Known(nil), inRangeOf(bulk); !slices.Equal(got, want) {
				t.Errorf("the client knows %v, of which %v in range", got, want)
			}
			if tc.move == nil && len(bulk.Known(nil)) == 0 {
				t.Error("nothing kept in range: the test's geometry is off")
			}
		})
	}
}

// TestCatchUpThreshold: a jump of up to catchUpFrames frames is stepped
// frame by frame, exactly as a client advanced every frame; a longer one is
// caught up in bulk, which keeps an entity that left the range and came
// back within the jump (the documented approximation).
func TestCatchUpThreshold(t *testing.T) {
	cfg := testConfig()
	period := cfg.WithDefaults().Period()
	start := time.Unix(0, 0)
	ents := []ent{
		{1, Player, Logic{Pos: Vec{5500, 5500}, Dest: Vec{5500, 5500}, Life: 100}},
		// Leaves into region x=7 at frame 17, and is back in range when
		// the player reaches region x=6, at frame 41: long after the grace.
		{2, NPC, Logic{Pos: Vec{6500, 5500}, Dest: Vec{7300, 5500}, Speed: 40, Life: 100}},
		{3, NPC, Logic{Pos: Vec{5600, 6000}, Dest: Vec{5600, 6000}, Life: 100}},            // stands in range
		{4, NPC, Logic{Pos: Vec{5200, 5300}, Dest: Vec{6400, 6000}, Speed: 2, Life: 100}},  // walks in range
		{5, NPC, Logic{Pos: Vec{4200, 5500}, Dest: Vec{3000, 5500}, Speed: 20, Life: 100}}, // walks out
	}
	limit := catchUpFrames(cfg)
	if limit < 60 {
		t.Fatalf("catchUpFrames %d: the test's geometry needs at least 60", limit)
	}
	for _, jump := range []int{1, 7, 45, limit, limit + 1, 100} {
		bulk := syncedClient(t, cfg, start, 1000, ents...)
		each := syncedClient(t, cfg, start, 1000, ents...)
		for _, c := range []*Client{bulk, each} {
			if err := c.Move(Vec{6300, 5500}, 16); err != nil {
				t.Fatal(err)
			}
		}
		bulk.Advance(start.Add(time.Duration(jump) * period))
		for f := 1; f <= jump; f++ {
			each.Advance(start.Add(time.Duration(f) * period))
		}
		what := fmt.Sprintf("a jump of %d frames", jump)
		if jump <= limit {
			sameView(t, what, bulk, each)
			continue
		}
		// In bulk: what left the range at some point in the jump is
		// doomed at its end, and dropped a grace later.
		for f := 1; f <= graceFrames(cfg.WithDefaults())+1; f++ {
			now := start.Add(time.Duration(jump+f) * period)
			bulk.Advance(now)
			each.Advance(now)
		}
		// The entity that came back is kept; everything else is as frame
		// by frame.
		_, kept := bulk.Entity(2)
		if _, ok := each.Entity(2); ok || !kept {
			t.Errorf("%s: entity 2 known frame by frame %v, in bulk %v; want false, true", what, ok, kept)
		}
		bulk.forget(2)
		sameView(t, what+", a grace later (entity 2 aside)", bulk, each)
	}
}

// TestStepNBounded: StepN costs at most the path's length, whatever n: a
// speed of 0 or less returns at once, pos unchanged, and any other stops at
// dest.
func TestStepNBounded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pos, dest Vec
		speed     int32
		n         int
		want      Vec
	}{
		{"speed 0, huge n", Vec{10, 10}, Vec{5000, 7000}, 0, math.MaxInt, Vec{10, 10}},
		{"negative speed, huge n", Vec{10, 10}, Vec{5000, 7000}, -3, math.MaxInt, Vec{10, 10}},
		{"speed 1, huge n", Vec{10, 10}, Vec{5000, 7000}, 1, math.MaxInt, Vec{5000, 7000}},
		{"at dest, huge n", Vec{7, 7}, Vec{7, 7}, 64, math.MaxInt, Vec{7, 7}},
		{"n 0", Vec{10, 10}, Vec{500, 10}, 8, 0, Vec{10, 10}},
		{"n negative", Vec{10, 10}, Vec{500, 10}, 8, -5, Vec{10, 10}},
		{"n 3", Vec{10, 10}, Vec{500, 10}, 8, 3, Vec{34, 10}},
	} {
		if got := StepN(tc.pos, tc.dest, tc.speed, tc.n); got != tc.want {
			t.Errorf("%s: StepN(%v, %v, %d, %d) = %v, want %v", tc.name, tc.pos, tc.dest, tc.speed, tc.n, got, tc.want)
		}
	}
}

// TestCatchUpDropsDoomed: an entity doomed before a long gap is dropped by
// the bulk catch-up even when the player's own walk reaches its region
// within the gap, as stepping frame by frame drops it once its grace is
// over, long before the player arrives.
func TestCatchUpDropsDoomed(t *testing.T) {
	cfg := testConfig()
	period := cfg.WithDefaults().Period()
	start := time.Unix(0, 0)
	size := int32(cfg.WithDefaults().RegionSize)
	ents := []ent{
		{1, Player, Logic{Pos: Vec{size / 2, size / 2}, Dest: Vec{size / 2, size / 2}, Life: 100}},
		{2, NPC, Logic{Pos: Vec{3*size + size/2, size / 2}, Dest: Vec{3*size + size/2, size / 2}, Life: 100}}, // two regions out
	}
	jump := catchUpFrames(cfg) + 40
	bulk := syncedClient(t, cfg, start, 100, ents...)
	each := syncedClient(t, cfg, start, 100, ents...)
	for _, c := range []*Client{bulk, each} {
		// Into the NPC's range in jump/2 frames: after its grace.
		if err := c.Move(Vec{3*size + size/2, size / 2}, 2*size/int32(jump/2)+1); err != nil {
			t.Fatal(err)
		}
		c.Advance(start.Add(period))
	}
	if bulk.ents[2] == nil || bulk.ents[2].doom == 0 {
		t.Fatal("the NPC is not doomed before the gap")
	}
	for f := 2; f <= jump+1; f++ {
		each.Advance(start.Add(time.Duration(f) * period))
	}
	bulk.Advance(start.Add(time.Duration(jump+1) * period))
	if _, ok := bulk.Entity(2); ok {
		t.Error("the doomed NPC is kept after the gap")
	}
	sameView(t, "after the gap", bulk, each)
}
