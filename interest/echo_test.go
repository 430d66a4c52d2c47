package interest

import (
	"slices"
	"testing"
	"time"
)

// echoWorld is a world with one joined player at the centre of region
// (5,5) and an NPC standing in region (6,5), and a recorder of the
// player's packets.
func echoWorld(t *testing.T) (w *World, rec *recorder, p, npc ID) {
	t.Helper()
	rec = &recorder{}
	w, err := NewWorld(testConfig(), time.Unix(0, 0), rec)
	if err != nil {
		t.Fatal(err)
	}
	size := int32(w.cfg.RegionSize)
	npc, err = w.Spawn(NPC, Logic{Pos: Vec{6*size + size/2, 5*size + size/2}, Life: 100}, Display{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	p, err = w.Spawn(Player, Logic{Pos: Vec{5*size + size/2, 5*size + size/2}, Life: 100}, Display{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Join(p); err != nil {
		t.Fatal(err)
	}
	return w, rec, p, npc
}

// tickFrames runs n frames.
func tickFrames(w *World, n int) {
	for range n {
		w.Tick(w.start.Add(time.Duration(w.frame+1) * w.cfg.Period()))
	}
}

// carrying counts the recorded messages about entity id, removals apart,
// and empties the recorder.
func carrying(t *testing.T, w *World, rec *recorder, id ID) (told, removed int) {
	t.Helper()
	for _, b := range rec.msgs {
		var hdr downHeader
		err := decodeDown(&w.lay, b, w.Frame(), &hdr, new(downMsg), func(m *downMsg) {
			switch {
			case m.id != id:
			case m.tag == tagRemove:
				removed++
			default:
				told++
			}
		})
		if err != nil {
			t.Fatalf("a packet does not decode: %v", err)
		}
	}
	rec.msgs = rec.msgs[:0]
	return told, removed
}

// TestEchoes: a forced sync is sent once on a link that lost nothing
// lately, and echoed in the next frames as the losses seen in the last
// lossMemory seconds call for (echoesAfter); losses older than that count
// for nothing.
func TestEchoes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		losses []int // frames ago
		want   int   // messages about the NPC
	}{
		{"clean", nil, 1},
		{"one loss", []int{1}, 1},
		{"two losses", []int{1, 40}, 2},
		{"three losses", []int{1, 2, 3}, 3},
		{"three old losses", []int{lossMemory*16 + 1, lossMemory*16 + 2, lossMemory*16 + 3}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, rec, p, npc := echoWorld(t)
			w.frame = 1000 // room for losses in the past
			o := w.get(p).obs
			for i, ago := range tc.losses {
				o.lossAt[i] = w.frame - ago
			}
			before := w.Stats()
			tickFrames(w, 8)
			if got, _ := carrying(t, w, rec, npc); got != tc.want {
				t.Errorf("the NPC's forced sync went out %d times, want %d", got, tc.want)
			}
			st := w.Stats()
			// (The player's own entity, sent at the join, is echoed too.)
			if got := st.Echoes - before.Echoes; (got == 0) != (tc.want == 1) {
				t.Errorf("Stats.Echoes grew by %d with %d copies of the forced sync", got, tc.want)
			}
			if st.ForcedSyncs-before.ForcedSyncs != 1 {
				t.Errorf("Stats.ForcedSyncs grew by %d, want 1: echoes are counted apart", st.ForcedSyncs-before.ForcedSyncs)
			}
		})
	}
}

// TestRepairBackInRange: a lost packet's entity that was out of range when
// the loss was found is repaired with a removal; if it is back in range
// when the removal would go out, the client still lacks what the lost
// packet said, and gets the entity's logic instead. A removal for leaving
// (Config.LeaveMessages) of an entity back in range is simply dropped.
func TestRepairBackInRange(t *testing.T) {
	for _, tc := range []struct {
		why  uint8
		want int
	}{{whyRepair, 1}, {whyLeave, 0}} {
		w, rec, p, npc := echoWorld(t)
		tickFrames(w, 8)
		carrying(t, w, rec, npc)
		w.get(p).obs.enqueue(item{kind: itemRemove, why: tc.why, id: npc})
		tickFrames(w, 2)
		if got, removed := carrying(t, w, rec, npc); got != tc.want || removed != 0 {
			t.Errorf("why %d: the entity back in range was told %d times and removed %d, want told %d and never removed", tc.why, got, removed, tc.want)
		}
	}
}

// TestLateBroadcast: an entity that broadcasts just before the forced sync
// of its region is due is sent by the forced sync too (its client could
// not have discovered it yet), and the discovery request that crosses that
// send is not answered again. One that broadcast earlier is left to
// discovery, as the seed has it.
func TestLateBroadcast(t *testing.T) {
	for _, tc := range []struct {
		name     string
		before   int // frames before the forced sync is due that the NPC's move is broadcast
		told     int // messages about the NPC: its move, and the forced sync's entry if late
		answered int // answers to the discovery request made after the forced sync
	}{{"late", 0, 2, 0}, {"early", 16, 1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			w, rec, p, npc := echoWorld(t)
			size := int32(w.cfg.RegionSize)
			// Move the NPC two regions away, out of range; then bring the
			// player next to it.
			if err := w.Place(npc, Vec{8*size + size/2, 5*size + size/2}); err != nil {
				t.Fatal(err)
			}
			tickFrames(w, 8)
			if err := w.Place(p, Vec{7*size + size/2, 5*size + size/2}); err != nil {
				t.Fatal(err)
			}
			tickFrames(w, 1)
			o := w.get(p).obs
			due := o.due[5] // region (8,5), right of the centre
			if !o.open[5] || due <= w.frame+tc.before {
				t.Fatalf("region (8,5) not waiting for its forced sync (open %v, due %d at frame %d)", o.open[5], due, w.frame)
			}
			tickFrames(w, due-tc.before-1-w.frame)
			carrying(t, w, rec, npc)
			lg, _ := w.Logic(npc)
			if err := w.Move(npc, Vec{lg.Pos.X, lg.Pos.Y + 10}, 4); err != nil {
				t.Fatal(err)
			}
			tickFrames(w, tc.before+1) // through the forced sync
			if got, _ := carrying(t, w, rec, npc); got != tc.told {
				t.Fatalf("the NPC was told of %d times around its region's forced sync, want %d", got, tc.told)
			}
			// The client, having heard the move, asks for the NPC.
			if err := w.Deliver(p, uplinkBytes(t, w, &uplink{discover: []uint32{uint32(npc)}})); err != nil {
				t.Fatal(err)
			}
			tickFrames(w, 2)
			if answers, _ := carrying(t, w, rec, npc); answers != tc.answered {
				t.Errorf("the discovery request was answered %d times, want %d", answers, tc.answered)
			}
		})
	}
}

// TestMissedAcrossBorder: a client that has just left the range of the
// region where an entity's move is made, in the frame whose step carries
// the entity over a border out of that range too, hears neither the move
// nor a removal from the move's broadcast; the world repairs it (a
// removal, since the entity is out of range) rather than leave the client
// with the old path.
func TestMissedAcrossBorder(t *testing.T) {
	w, rec, p, npc := echoWorld(t)
	size := int32(w.cfg.RegionSize)
	// The player at the top edge of region (5,5), the NPC at the bottom
	// edge of (6,6): in range of each other.
	if err := w.Place(npc, Vec{6*size + size/2, 7*size - 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Place(p, Vec{5*size + size/2, 5 * size}); err != nil {
		t.Fatal(err)
	}
	tickFrames(w, 48)
	if told, _ := carrying(t, w, rec, npc); told == 0 {
		t.Fatal("the player never learned the NPC")
	}
	// In one frame the player steps up into (5,4), out of range of (6,6),
	// and the NPC's move, made in (6,6), steps it down into (6,7).
	if err := w.Move(p, Vec{5*size + size/2, 5*size - 2}, 4); err != nil {
		t.Fatal(err)
	}
	if err := w.Move(npc, Vec{6*size + size/2, 7*size + 2}, 4); err != nil {
		t.Fatal(err)
	}
	tickFrames(w, 4)
	me, _ := w.Logic(p)
	it, _ := w.Logic(npc)
	if w.RegionOf(me.Pos) != (Region{5, 4}) || w.RegionOf(it.Pos) != (Region{6, 7}) || w.InRange(p, npc) {
		t.Fatalf("player in %v, NPC in %v: the test's moves went wrong", w.RegionOf(me.Pos), w.RegionOf(it.Pos))
	}
	told, removed := carrying(t, w, rec, npc)
	if told != 0 || removed != 1 {
		t.Errorf("the player was told of the NPC %d times and sent %d removals, want one removal", told, removed)
	}
}

// TestRequestEcho: on a link that has lost a packet lately, the client
// sends each discovery request twice, a packet apart, so that a lost
// request costs a frame rather than retryAfter; on a clean link once. The
// echo is not a try of its own.
func TestRequestEcho(t *testing.T) {
	for _, lossy := range []bool{false, true} {
		c, err := NewClient(testConfig(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if lossy {
			c.lossy = c.frame + 100
		}
		request(c.discover, 7)
		now := time.Unix(0, 0)
		var asked []int
		lay := newLayout(testConfig().WithDefaults())
		for i := range 4 {
			b := c.Packet(now.Add(time.Duration(i) * 62500 * time.Microsecond))
			if b == nil {
				continue
			}
			var u uplink
			if err := u.decode(&lay, b, c.frame); err != nil {
				t.Fatal(err)
			}
			if len(u.discover) == 1 && u.discover[0] == 7 {
				asked = append(asked, i)
			}
		}
		want := []int{0}
		if lossy {
			want = []int{0, 1}
		}
		if !slices.Equal(asked, want) {
			t.Errorf("lossy %v: the request went in packets %v, want %v", lossy, asked, want)
		}
		if a := c.discover[7]; a.tries != 1 {
			t.Errorf("lossy %v: %d tries counted, want 1", lossy, a.tries)
		}
	}
}

// TestToldRing checks toldSince against the ring's contents as the ring
// wraps, with IDs that share buckets: an ID is found while one of the
// last toldSize entries holds it, after the frame asked, and the bucket
// counts match the ring's entries.
func TestToldRing(t *testing.T) {
	w := &World{}
	o := &observer{}
	var sent []toldRec // everything told, in order
	for i := range 5 * toldSize {
		w.frame = i / 3
		id := ID(1 + i*37%(3*toldBuckets)) // three IDs to a bucket, in no order
		if i%5 == 0 && i > 0 {
			id = sent[i-1].id // told again
		}
		o.tell(w, id)
		sent = append(sent, toldRec{id: id, frame: int32(w.frame)})

		var in [toldBuckets]uint8
		for _, r := range o.told {
			if r.id != 0 {
				in[toldBucket(r.id)]++
			}
		}
		if in != o.toldIn {
			t.Fatalf("after %d tells: bucket counts %v, ring holds %v", i+1, o.toldIn, in)
		}
		last := sent[max(0, len(sent)-toldSize):]
		for probe := ID(1); probe <= 3*toldBuckets; probe++ {
			for _, f := range []int{-1, w.frame - 2, w.frame - 1} {
				want := slices.ContainsFunc(last, func(r toldRec) bool { return r.id == probe && int(r.frame) > f })
				if got := o.toldSince(probe, f); got != want {
					t.Fatalf("after %d tells: toldSince(%d, %d) = %v, want %v", i+1, probe, f, got, want)
				}
			}
		}
	}
}
