package interest

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"
)

// fanout hands a world's packets to its clients and hashes every packet,
// with its receiver and channel, in the order sent.
type fanout struct {
	t       *testing.T
	clients map[ID]*Client
	now     time.Time
	sum     uint64
	packets int
	log     []string
}

func (f *fanout) record(id ID, channel byte, msg []byte) error {
	h := fnv.New64a()
	fmt.Fprint(h, f.sum, id, channel)
	h.Write(msg)
	f.sum = h.Sum64()
	f.packets++
	f.log = append(f.log, fmt.Sprintf("%d %c %x", id, channel, msg))
	if err := f.clients[id].Deliver(f.now, msg); err != nil {
		f.t.Errorf("client %d: %v", id, err)
	}
	return nil
}

func (f *fanout) SendUnreliable(id ID, msg []byte) error { return f.record(id, 'u', msg) }
func (f *fanout) SendReliable(id ID, msg []byte) error   { return f.record(id, 'r', msg) }

// TestDeliverAll runs two worlds side by side from the same seed, one
// handed its uplinks by Deliver and the other by DeliverAll, with hostile
// packets among them: malformed bytes, a player that is not there, an NPC,
// a player that left, ID 0 and IDs past every entity. Every packet the
// two send must be the same, and so must their stats; DeliverAll must
// refuse the packets Deliver returns an error for.
func TestDeliverAll(t *testing.T) {
	cfg := Config{Width: 12, Height: 12, DiscoveryRate: 64} // a low rate, for the flood below to pass
	start := time.Unix(0, 0)
	type side struct {
		w       *World
		out     *fanout
		players []ID
		npcs    []ID
		rng     *rand.Rand
	}
	build := func() *side {
		s := &side{out: &fanout{t: t, clients: map[ID]*Client{}, now: start}, rng: rand.New(rand.NewPCG(5, 6))}
		w, err := NewWorld(cfg, start, s.out)
		if err != nil {
			t.Fatal(err)
		}
		s.w = w
		edge := int32(cfg.Width * w.Config().RegionSize)
		pos := func() Vec { return Vec{s.rng.Int32N(edge), s.rng.Int32N(edge)} }
		for i := range 3 * entitySlab { // past a slab
			id, err := w.Spawn(NPC, Logic{Pos: pos(), Life: 100}, Display{Name: "wolf", Appearance: uint32(i % 5)})
			if err != nil {
				t.Fatal(err)
			}
			s.npcs = append(s.npcs, id)
		}
		for i := range 40 {
			id, err := w.Spawn(Player, Logic{Pos: pos(), Life: 100}, Display{Name: fmt.Sprint("p", i)})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Join(id); err != nil {
				t.Fatal(err)
			}
			c, err := NewClient(cfg, id)
			if err != nil {
				t.Fatal(err)
			}
			s.out.clients[id] = c
			s.players = append(s.players, id)
		}
		return s
	}
	a, b := build(), build()
	gone := a.players[3] // leaves at frame 50; its packets still come
	deliverErrs, refused := 0, 0
	for f := range 200 {
		now := a.w.NextFrame()
		var batches [2][]Uplink
		for n, s := range []*side{a, b} {
			s.out.now = now
			var batch []Uplink
			for i, id := range s.players {
				c := s.out.clients[id]
				c.Advance(now)
				if s.rng.IntN(8) == 0 {
					me, _ := c.Self()
					_ = c.Move(Vec{me.Pos.X + s.rng.Int32N(2001) - 1000, me.Pos.Y + s.rng.Int32N(2001) - 1000}, 60)
				}
				if s.rng.IntN(5) == 0 { // more display requests than the rate allows
					var dup uplink
					for k := range 10 {
						dup.display = append(dup.display, uint32(s.npcs[(f*10+i)%(len(s.npcs)-10)+k]))
					}
					batch = append(batch, Uplink{id, bytes.Clone(uplinkBytes(t, s.w, &dup))})
				}
				if p := c.Packet(now); p != nil {
					batch = append(batch, Uplink{id, bytes.Clone(p)}) // the client reuses p
				}
			}
			batches[n] = append(batch,
				Uplink{s.players[f%len(s.players)], []byte{0xff, 0x01}},
				Uplink{s.npcs[f%len(s.npcs)], []byte{kindUp << (8 - kindBits)}},
				Uplink{gone, []byte{kindUp << (8 - kindBits)}},
				Uplink{0, nil},
				Uplink{ID(len(s.npcs) + len(s.players) + 1 + f), nil},
				Uplink{ID(1<<31 + f), nil})
		}
		for _, u := range batches[0] {
			if a.w.Deliver(u.Player, u.Msg) != nil {
				deliverErrs++
			}
		}
		refused += b.w.DeliverAll(batches[1])
		if f == 50 {
			a.w.Leave(gone)
			b.w.Leave(gone)
		}
		a.w.Tick(now)
		b.w.Tick(now)
		if a.out.sum != b.out.sum {
			for i := range a.out.log {
				if a.out.log[i] != b.out.log[i] {
					t.Logf("%d:\n%s\n%s", i, a.out.log[i], b.out.log[i])
					break
				}
			}
			t.Fatalf("frame %d: the worlds sent different packets (%d and %d so far)", f, a.out.packets, b.out.packets)
		}
	}
	if refused != deliverErrs {
		t.Errorf("DeliverAll refused %d packets, Deliver returned %d errors", refused, deliverErrs)
	}
	sa, sb := a.w.Stats(), b.w.Stats()
	if sa != sb {
		t.Errorf("stats differ:\nDeliver    %+v\nDeliverAll %+v", sa, sb)
	}
	if sa.PacketsIn == 0 || sa.Dropped[DropMalformed] == 0 || sa.Dropped[DropRate] == 0 || a.out.packets < 1000 {
		t.Errorf("the run did not do what it is for: %d packets out, stats %+v", a.out.packets, sa)
	}
}
