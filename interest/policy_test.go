package interest

import (
	"slices"
	"testing"
	"time"
)

// perPlayer records the packets the world sends to each player.
type perPlayer struct{ pkts map[ID][][]byte }

func (s *perPlayer) SendUnreliable(id ID, msg []byte) error {
	s.pkts[id] = append(s.pkts[id], append([]byte(nil), msg...))
	return nil
}
func (s *perPlayer) SendReliable(id ID, msg []byte) error { return s.SendUnreliable(id, msg) }

// at returns the centre of region (x, y) plus an offset.
func at(cfg Config, x, y, dx, dy int) Vec {
	return Vec{int32(x*cfg.RegionSize + cfg.RegionSize/2 + dx), int32(y*cfg.RegionSize + cfg.RegionSize/2 + dy)}
}

// TestPolicyTiers: each tier of the default state-sync policy (seed
// 5.1.2) reaches a watching player at its own period: the player's target
// every 250 ms, a fighter in the field every second, a fighter in a city
// every 2 s, city folk every 15 s, the rest every 5 s. Making an entity the
// target speeds it up.
func TestPolicyTiers(t *testing.T) {
	cfg := testConfig()
	cfg.City = func(r Region) bool { return r.X >= 6 }
	cfg = cfg.WithDefaults()
	start := time.Unix(0, 0)
	out := &perPlayer{pkts: map[ID][][]byte{}}
	w, err := NewWorld(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	me, _ := w.Spawn(Player, Logic{Pos: at(cfg, 5, 5, 0, 0), Dest: at(cfg, 5, 5, 0, 0), Life: 100, Mana: 100}, Display{})
	if err := w.Join(me); err != nil {
		t.Fatal(err)
	}
	type npc struct {
		name   string
		x, y   int
		combat bool
		every  time.Duration
		id     ID
	}
	npcs := []*npc{
		{name: "target", x: 5, y: 4, every: 250 * time.Millisecond},
		{name: "field combat", x: 4, y: 5, combat: true, every: time.Second},
		{name: "city combat", x: 6, y: 5, combat: true, every: 2 * time.Second},
		{name: "city", x: 6, y: 4, every: 15 * time.Second},
		{name: "other", x: 4, y: 4, every: 5 * time.Second},
	}
	for _, n := range npcs {
		p := at(cfg, n.x, n.y, 0, 0)
		n.id, _ = w.Spawn(NPC, Logic{Pos: p, Dest: p, Combat: n.combat, Life: 100, Mana: 100}, Display{})
	}
	if err := w.SetTarget(me, npcs[0].id); err != nil {
		t.Fatal(err)
	}
	frameOf := func(f int) time.Time { return start.Add(time.Duration(f) * cfg.Period()) }
	// Vitals change every frame; count the frames they reach the player.
	seen := map[ID][]int{}
	run := func(from, to int) {
		for f := from; f < to; f++ {
			for _, n := range npcs {
				w.Update(n.id, func(lg *Logic) { lg.Life = uint8(50 + f%40) })
			}
			w.Tick(frameOf(f + 1))
			for _, pkt := range out.pkts[me] {
				var hdr downHeader
				var m downMsg
				if pkt[0]&(1<<kindBits-1) != kindDown {
					continue
				}
				err := decodeDown(&w.lay, pkt, w.frame, &hdr, &m, func(m *downMsg) {
					if m.tag == tagVitals || m.tag == tagLogic {
						seen[m.id] = append(seen[m.id], w.frame)
					}
				})
				if err != nil {
					t.Fatalf("frame %d: %v", f, err)
				}
			}
			out.pkts[me] = out.pkts[me][:0]
		}
	}
	secs := func(d time.Duration) int { return int(d / cfg.Period()) }
	run(0, secs(40*time.Second))
	period := func(frames []int, from int) time.Duration {
		var gaps []int
		for i := 1; i < len(frames); i++ {
			if frames[i-1] >= from {
				gaps = append(gaps, frames[i]-frames[i-1])
			}
		}
		if len(gaps) == 0 {
			return 0
		}
		slices.Sort(gaps)
		return time.Duration(gaps[len(gaps)/2]) * cfg.Period()
	}
	warm := secs(3 * time.Second) // past the forced sync on joining
	for _, n := range npcs {
		got := period(seen[n.id], warm)
		t.Logf("%-12s synced every %v (want %v): %d syncs", n.name, got, n.every, len(seen[n.id]))
		if got < n.every || got > n.every+2*cfg.Period() {
			t.Errorf("%s: synced every %v, want %v", n.name, got, n.every)
		}
	}
	// The player now targets the city NPC: it is synced as often as a target.
	city := npcs[3]
	if err := w.SetTarget(me, city.id); err != nil {
		t.Fatal(err)
	}
	from := w.frame
	run(from, from+secs(5*time.Second))
	if got := period(seen[city.id], from+2); got != 250*time.Millisecond {
		t.Errorf("the targeted city NPC: synced every %v, want 250ms", got)
	}
}

// TestPeakShaving: a player who arrives among 300 entities is told of
// them over several frames, each packet within the byte budget (seed
// 2.2), and knows every one at the end.
func TestPeakShaving(t *testing.T) {
	cfg := testConfig().WithDefaults()
	start := time.Unix(0, 0)
	out := &perPlayer{pkts: map[ID][][]byte{}}
	w, err := NewWorld(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		p := at(cfg, 5, 5, (i%20)*40-400, (i/20)*40-300)
		if _, err := w.Spawn(NPC, Logic{Pos: p, Dest: p, Life: 100, Mana: 100}, Display{}); err != nil {
			t.Fatal(err)
		}
	}
	frameOf := func(f int) time.Time { return start.Add(time.Duration(f) * cfg.Period()) }
	w.Tick(frameOf(5))
	me, _ := w.Spawn(Player, Logic{Pos: at(cfg, 5, 5, 0, 0), Dest: at(cfg, 5, 5, 0, 0), Life: 100, Mana: 100}, Display{})
	if err := w.Join(me); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(cfg, me)
	if err != nil {
		t.Fatal(err)
	}
	const header = 16 // the packet header and acknowledgements, outside the budget
	sizes := []int{}
	for f := 6; f < 6+4*cfg.Hz && c.Len() < 300; f++ {
		now := frameOf(f)
		w.Tick(now)
		for _, pkt := range out.pkts[me] {
			if pkt[0]&(1<<kindBits-1) == kindDown {
				sizes = append(sizes, len(pkt))
			}
			if err := c.Deliver(now, pkt); err != nil {
				t.Fatal(err)
			}
		}
		out.pkts[me] = out.pkts[me][:0]
		c.Advance(now)
		w.Deliver(me, c.Packet(now)) // display requests over the rate are dropped: the client asks again
	}
	t.Logf("300 entities known after %d packets of %v bytes (budget %d a frame)", len(sizes), sizes, cfg.TickBudget)
	if c.Len() < 300 {
		t.Fatalf("the client knows %d of 300 entities", c.Len())
	}
	if len(sizes) < 5 {
		t.Errorf("the burst went out in %d packets: not spread", len(sizes))
	}
	for i, n := range sizes {
		if n > cfg.TickBudget+header {
			t.Errorf("packet %d: %d bytes, over the budget of %d", i, n, cfg.TickBudget)
		}
	}
}
