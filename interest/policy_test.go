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

// TestDirectionFirst: when a moving player's range takes in a new column
// of regions, the one on its path is synced first (seed 5.1.3): Lead
// before the player would reach it, or Lead before the regular time,
// whichever is sooner, whatever its speed and however far its
// destination; the regions to the sides come at the regular time, a frame
// under 2 s. A standing player's new regions all come at the regular time.
func TestDirectionFirst(t *testing.T) {
	cfg := testConfig().WithDefaults()
	period := cfg.Period()
	for _, tc := range []struct {
		name    string
		speed   int32
		regions int // how far east the destination lies
	}{
		{"walking", 8, 2},
		{"running", 48, 2},
		{"running to a far destination", 48, 4}, // four regions on: the old rule gave no lead
		{"standing", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(0, 0)
			out := &perPlayer{pkts: map[ID][][]byte{}}
			w, err := NewWorld(cfg, start, out)
			if err != nil {
				t.Fatal(err)
			}
			// Silent NPCs (they never broadcast, so only a forced sync
			// brings them) in the middle of the regions two columns east.
			ahead, _ := w.Spawn(NPC, Logic{Pos: at(cfg, 4, 5, 0, 0), Dest: at(cfg, 4, 5, 0, 0), Life: 100, Mana: 100}, Display{})
			side, _ := w.Spawn(NPC, Logic{Pos: at(cfg, 4, 4, 0, 0), Dest: at(cfg, 4, 4, 0, 0), Life: 100, Mana: 100}, Display{})
			pos := at(cfg, 2, 5, 300, 0) // east of centre in region (2,5)
			me, _ := w.Spawn(Player, Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100}, Display{})
			if err := w.Join(me); err != nil {
				t.Fatal(err)
			}
			c, _ := NewClient(cfg, me)
			frameOf := func(f int) time.Time { return start.Add(time.Duration(f) * period) }
			tick := func(f int) {
				now := frameOf(f)
				w.Tick(now)
				for _, pkt := range out.pkts[me] {
					c.Deliver(now, pkt)
				}
				out.pkts[me] = out.pkts[me][:0]
				c.Advance(now)
				w.Deliver(me, c.Packet(now))
			}
			f := 1
			for ; f < 3*cfg.Hz; f++ { // the range at joining is synced
				tick(f)
			}
			if tc.speed > 0 {
				if err := w.Move(me, at(cfg, 2+tc.regions, 5, 0, 0), tc.speed); err != nil {
					t.Fatal(err)
				}
			} else {
				w.Place(me, at(cfg, 3, 5, 0, 0)) // stands in the next region at once
			}
			crossed, known := -1, map[ID]int{}
			reach := -1 // when the player reaches the region ahead
			for ; f < 12*cfg.Hz; f++ {
				tick(f)
				lg, _ := w.Logic(me)
				if crossed < 0 && w.RegionOf(lg.Pos) == (Region{3, 5}) {
					crossed = w.Frame()
				}
				if reach < 0 && w.RegionOf(lg.Pos) == (Region{4, 5}) {
					reach = w.Frame()
				}
				for _, id := range []ID{ahead, side} {
					if _, ok := c.Entity(id); ok && known[id] == 0 {
						known[id] = w.Frame()
					}
				}
			}
			if crossed < 0 || known[ahead] == 0 || known[side] == 0 {
				t.Fatalf("crossed at %d, known %v", crossed, known)
			}
			ms := func(n int) time.Duration { return time.Duration(n-crossed) * period }
			t.Logf("after the crossing: region ahead known in %v, the side in %v; the player reaches it in %v",
				ms(known[ahead]), ms(known[side]), ms(reach))
			regular := cfg.ForcedSync
			switch {
			case ms(known[side]) > 2*time.Second || ms(known[side]) < regular-period:
				t.Errorf("the side region came after %v, want the regular %v", ms(known[side]), regular)
			case tc.speed == 0 && ms(known[ahead]) < regular-period:
				t.Errorf("standing, the region east came after %v, before the regular %v", ms(known[ahead]), regular)
			case tc.speed > 0 && known[ahead] >= known[side]:
				t.Errorf("the region ahead came after %v, no sooner than the side's %v", ms(known[ahead]), ms(known[side]))
			case tc.speed > 0 && reach >= 0 && ms(reach)-ms(known[ahead]) < cfg.Lead-2*period:
				t.Errorf("the region ahead came %v before the player reached it, want Lead (%v)", ms(reach)-ms(known[ahead]), cfg.Lead)
			}
		})
	}
}
