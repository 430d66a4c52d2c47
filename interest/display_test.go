package interest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// direct hands the world's packets straight to one client.
type direct struct{ c *Client }

func (d *direct) SendUnreliable(_ ID, msg []byte) error { return d.c.Deliver(time.Unix(0, 0), msg) }
func (d *direct) SendReliable(id ID, msg []byte) error  { return d.SendUnreliable(id, msg) }

// stepper runs a world and one player's client, connected directly, frame
// by frame.
type stepper struct {
	t      *testing.T
	w      *World
	out    *direct
	player ID
	start  time.Time
	frame  int
}

// newStepper makes an 8x8-region world with a player at (1000, 1000)
// whose client the world's packets go to directly.
func newStepper(t *testing.T) *stepper {
	t.Helper()
	cfg := Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	out := &direct{}
	w, err := NewWorld(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	player, _ := w.Spawn(Player, Logic{Pos: Vec{1000, 1000}, Life: 100}, Display{Name: "you"})
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	out.c, _ = NewClient(cfg, player)
	return &stepper{t: t, w: w, out: out, player: player, start: start}
}

// run plays n frames: the world's tick, then the client's, whose packet
// goes straight back.
func (s *stepper) run(n int) {
	s.t.Helper()
	for range n {
		s.frame++
		now := s.start.Add(time.Duration(s.frame) * s.w.Config().Period())
		s.w.Tick(now)
		s.out.c.Advance(now)
		if pkt := s.out.c.Packet(now); pkt != nil {
			if err := s.w.Deliver(s.player, pkt); err != nil {
				s.t.Fatalf("frame %d: %v", s.frame, err)
			}
		}
	}
}

// TestDisplayVersions checks that display data is fetched once per
// version: a client holds the first version, and after SetDisplay it
// fetches and holds the second, whatever the world cached in between; a
// spawn that reuses a removed entity's ID is fetched afresh.
func TestDisplayVersions(t *testing.T) {
	s := newStepper(t)
	w, out := s.w, s.out
	npc, _ := w.Spawn(NPC, Logic{Pos: Vec{1500, 900}, Life: 100}, Display{Name: "wolf", Appearance: 1})
	run := s.run
	want := func(id ID, name string, app uint32) {
		t.Helper()
		v, ok := out.c.Entity(id)
		if !ok || !v.HasDisplay || v.Display.Name != name || v.Display.Appearance != app {
			t.Fatalf("entity %d: known %v, display %+v (has %v), want %q/%d", id, ok, v.Display, v.HasDisplay, name, app)
		}
	}
	run(8)
	want(npc, "wolf", 1)
	before := w.Stats().ReliableOut
	run(32)
	if w.Stats().ReliableOut != before {
		t.Errorf("display data sent again for a version the client holds: %d more bytes", w.Stats().ReliableOut-before)
	}
	if err := w.SetDisplay(npc, Display{Name: "dire wolf", Appearance: 2}); err != nil {
		t.Fatal(err)
	}
	run(w.Config().period(false, false, false) + 16) // the next state sync tells the new version
	want(npc, "dire wolf", 2)

	if err := w.Despawn(npc); err != nil {
		t.Fatal(err)
	}
	run(8)
	again, _ := w.Spawn(NPC, Logic{Pos: Vec{1200, 1100}, Life: 100}, Display{Name: "bear", Appearance: 3})
	if again != npc {
		t.Logf("the new NPC has ID %d, not the removed %d's", again, npc)
	}
	run(48) // forced sync, then display
	want(again, "bear", 3)
}

// TestDisplayDictionaries checks the connection's look and name
// dictionaries: a look shared by several entities (every grey wolf) is
// sent once and referred to by index after; a variant with the same name
// refers to the name; a look only one entity has (a player's) is sent in
// full and kept by neither side. Everything reads back right, and a
// display message that refers past a dictionary is dropped whole, adding
// none of its looks or names.
func TestDisplayDictionaries(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}.WithDefaults()
	l := newLayout(cfg)
	var (
		wnames names
		wlooks lookDict
		wr     codec.Writer
	)
	wolf := Display{Name: "grey wolf", Appearance: 1}
	entries := []struct {
		e      displayEntry
		look   uint32
		shared bool
	}{
		{displayEntry{id: 5, d: wolf}, 1, true},
		{displayEntry{id: 6, d: wolf}, 1, true},
		{displayEntry{id: 7, d: Display{Name: "grey wolf", Appearance: 2}}, 2, true},
		{displayEntry{id: 8, ver: 3, d: Display{Name: "Ayla", Appearance: 77, Camp: 2}}, 3, false},
		{displayEntry{id: 9, d: Display{Camp: 1}}, 4, true},
	}
	var sizes []int
	for _, en := range entries {
		before := wr.Len()
		l.writeDisplay(&wr, en.e.id, en.e.ver, &wlooks, &wnames, en.look, en.shared, &en.e.d)
		sizes = append(sizes, wr.Len()-before)
	}
	if sizes[1] >= sizes[0]/2 {
		t.Errorf("the repeated look cost %d bits against %d the first time", sizes[1], sizes[0])
	}
	if sizes[2] >= sizes[0] {
		t.Errorf("a look with a known name cost %d bits against %d", sizes[2], sizes[0])
	}
	var (
		client names
		looks  []Display
	)
	r := codec.NewReader(wr.Bytes())
	for _, want := range entries {
		var got displayEntry
		l.readDisplay(r, &got, &client, &looks)
		if got != want.e {
			t.Fatalf("read %+v, want %+v", got, want.e)
		}
	}
	if len(client.list) != 1 || client.list[0] != "grey wolf" {
		t.Errorf("names %q, want only the shared looks' non-empty name", client.list)
	}
	if len(looks) != 3 || wlooks.len() != 3 || looks[0] != wolf {
		t.Errorf("looks %+v (world side holds %d), want the three shared ones", looks, wlooks.len())
	}

	// Hostile messages: a new shared look, then a reference past the look
	// dictionary (or past the name dictionary).
	for _, past := range []string{"look", "name"} {
		c, _ := NewClient(cfg, 1)
		var bad codec.Writer
		bad.WriteBits(kindDisplay, kindBits)
		bad.WriteUint(2, maxDisplayBatch)
		var (
			fn names
			fl lookDict
		)
		l.writeDisplay(&bad, 9, 0, &fl, &fn, 1, true, &Display{Name: "bear"})
		l.writeID(&bad, 10)
		writeUsual(&bad, 0, 0, 255)
		if past == "look" {
			bad.WriteBool(true)
			bad.WriteUint(7, maxLooks-1)
		} else {
			bad.WriteBool(false)
			bad.WriteBits(0, 32+8)
			bad.WriteBool(true)
			bad.WriteBool(true)
			bad.WriteUint(7, maxNames-1)
		}
		if err := c.Deliver(time.Unix(0, 0), bad.Bytes()); !errors.Is(err, ErrMalformed) {
			t.Fatalf("a reference past the %s dictionary: %v, want ErrMalformed", past, err)
		}
		if len(c.names.list) != 0 || len(c.looks) != 0 || len(c.displays) != 0 {
			t.Errorf("a dropped message left names %q, looks %v and %d display entries", c.names.list, c.looks, len(c.displays))
		}
	}
}

// TestFastAcks checks the client's acknowledgements: with nothing else to
// say it acknowledges every ackEvery frames, but after a gap in the
// world's sequence numbers it acknowledges the next fastAckPackets packets
// at once, so the world learns of the loss in a round trip.
func TestFastAcks(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}.WithDefaults()
	l := newLayout(cfg)
	c, _ := NewClient(cfg, 1)
	start := time.Unix(0, 0)
	pkt := func(seq, frame int) []byte {
		var w codec.Writer
		(&downHeader{seq: seq & seqMask, full: true, frame: frame}).encode(&w)
		return append([]byte(nil), w.Bytes()...)
	}
	// acks plays n frames, each bringing the world's next packet unless its
	// sequence number is in lost, and counts the uplinks that acknowledge.
	frame, seq := 0, 0
	acks := func(n int, lost map[int]bool) int {
		count := 0
		for range n {
			frame++
			now := start.Add(time.Duration(frame) * cfg.Period())
			if !lost[seq] {
				if err := c.Deliver(now, pkt(seq, frame)); err != nil {
					t.Fatal(err)
				}
			}
			seq++
			c.Advance(now)
			if b := c.Packet(now); b != nil {
				var u uplink
				if err := u.decode(&l, b, frame); err != nil {
					t.Fatal(err)
				}
				if u.hasAck {
					count++
				}
			}
		}
		return count
	}
	if n := acks(32, nil); n > 32/ackEvery+1 {
		t.Errorf("a clean link: %d acknowledgements in 32 frames, want about %d", n, 32/ackEvery)
	}
	if n := acks(6, map[int]bool{seq: true}); n < fastAckPackets {
		t.Errorf("after a gap: %d acknowledgements in the next 5 packets, want at least %d", n, fastAckPackets)
	}
}

// TestLossByLaterPacket checks the world's loss detection for a quiet
// client: a packet is lost once one sent two frames after it is
// acknowledged without it, and what it carried is repaired, without
// waiting for three newer packets.
func TestLossByLaterPacket(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}
	rec := &recorder{}
	start := time.Unix(0, 0)
	w, err := NewWorld(cfg, start, rec)
	if err != nil {
		t.Fatal(err)
	}
	player, _ := w.Spawn(Player, Logic{Pos: Vec{1000, 1000}, Life: 100}, Display{Name: "you"})
	if _, err := w.Spawn(NPC, Logic{Pos: Vec{1500, 900}, Life: 100}, Display{Name: "wolf"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	type sent struct{ seq, frame int }
	var pkts []sent
	for f := 1; f <= 12; f++ {
		rec.msgs = rec.msgs[:0]
		w.Tick(start.Add(time.Duration(f) * w.Config().Period()))
		for _, m := range rec.msgs {
			var h downHeader
			if err := decodeDown(&w.lay, m, w.Frame(), &h, new(downMsg), func(*downMsg) {}); err == nil {
				pkts = append(pkts, sent{h.seq, h.frame})
			}
		}
	}
	// The first packet (the join's logic) was lost; the first one sent at
	// least two frames after it, but fewer than three packets after it,
	// arrived alone.
	j := 1
	for j < len(pkts) && pkts[j].frame-pkts[0].frame < reorderFrames {
		j++
	}
	if j >= 3 || j >= len(pkts) {
		t.Fatalf("no packet two frames after the first and within three packets: %v", pkts)
	}
	last := pkts[j]
	before := w.Stats().Repairs
	up := uplinkBytes(t, w, &uplink{hasAck: true, ackSeq: last.seq})
	if err := w.Deliver(player, up); err != nil {
		t.Fatal(err)
	}
	w.Tick(start.Add(13 * w.Config().Period()))
	t.Logf("packets %v, acked %v, repairs %d -> %d", pkts, last, before, w.Stats().Repairs)
	if w.Stats().Repairs == before {
		t.Errorf("no repair after packet %d was acknowledged without packet %d (%d frames earlier)", last.seq, pkts[0].seq, last.frame-pkts[0].frame)
	}
}

// TestIndexTableTruncate: forgetting the last entries of a dictionary's
// table leaves every other entry found, whatever the collisions and
// growth in between, and the table takes new entries after it.
func TestIndexTableTruncate(t *testing.T) {
	// Hashes that collide on their low bits make long probes.
	hash := func(i int) uint64 { return uint64(i%7)<<32 | uint64(i%5)*64 | uint64(i)<<40 }
	var tb indexTable
	n := 0
	add := func() { tb.add(hash(n)); n++ }
	check := func(when string) {
		t.Helper()
		for i := 0; i < n+40; i++ {
			got := tb.find(hash(i), func(j int) bool { return j == i })
			if want := map[bool]int{true: i, false: -1}[i < n]; got != want {
				t.Fatalf("%s: find(%d) = %d, want %d", when, i, got, want)
			}
		}
	}
	for _, step := range []struct{ add, keep int }{{10, 7}, {100, 60}, {3, 60}, {200, 1}, {50, 0}, {80, 80}} {
		for range step.add {
			add()
		}
		check("after adding")
		tb.truncate(step.keep)
		n = step.keep
		check("after truncating")
	}
}

// failing hands a world's packets to a client but for the reliable sends
// it is told to fail, which the client never gets.
type failing struct {
	c    *Client
	fail func() bool
}

func (f *failing) SendUnreliable(_ ID, msg []byte) error { return f.c.Deliver(time.Unix(0, 0), msg) }
func (f *failing) SendReliable(id ID, msg []byte) error {
	if f.fail() {
		return errors.New("queue full")
	}
	return f.SendUnreliable(id, msg)
}

// TestDisplayDictionariesSendFailed: display messages whose send fails
// take back what they added to the connection's dictionaries, so the
// later ones, referring to the dictionaries, read back right.
func TestDisplayDictionariesSendFailed(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	sends := 0
	out := &failing{fail: func() bool { sends++; return sends%2 == 1 }}
	w, err := NewWorld(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	player, _ := w.Spawn(Player, Logic{Pos: Vec{1000, 1000}, Life: 100}, Display{Name: "you"})
	// Templates: each look shared by four entities, names shared by two looks.
	var npcs []ID
	for i := range 32 {
		d := Display{Name: fmt.Sprintf("beast %d", i/8), Appearance: uint32(i / 4)}
		id, _ := w.Spawn(NPC, Logic{Pos: Vec{600 + int32(i)*40, 700 + int32(i%5)*90}, Life: 100}, d)
		npcs = append(npcs, id)
	}
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	out.c, _ = NewClient(cfg, player)
	(&stepper{t: t, w: w, out: &direct{c: out.c}, player: player, start: start}).run(160)
	if w.Stats().Dropped[DropSendFailed] == 0 {
		t.Fatal("no send failed: the test tests nothing")
	}
	if m := out.c.Stats().Malformed; m != 0 {
		t.Fatalf("the client dropped %d packets as malformed", m)
	}
	for i, id := range npcs {
		v, ok := out.c.Entity(id)
		want := Display{Name: fmt.Sprintf("beast %d", i/8), Appearance: uint32(i / 4)}
		if !ok || !v.HasDisplay || v.Display != want {
			t.Errorf("entity %d: known %v, display %+v (has %v), want %+v", id, ok, v.Display, v.HasDisplay, want)
		}
	}
}

// TestLookComesBack: a shared look whose entities all go keeps its id, so
// a pack that rises again is told by the connection's dictionary, not in
// full under a new id; looks never shared, and dormant ones past
// maxDormantLooks, are forgotten.
func TestLookComesBack(t *testing.T) {
	s := newStepper(t)
	w, out, player := s.w, s.out, s.player
	wolf := Display{Name: "grey wolf", Appearance: 9}
	spawnPack := func() []ID {
		var ids []ID
		for i := range 4 {
			id, _ := w.Spawn(NPC, Logic{Pos: Vec{900 + int32(i)*50, 1100}, Life: 100}, wolf)
			ids = append(ids, id)
		}
		return ids
	}
	for _, id := range spawnPack() {
		_ = w.Despawn(id)
	}
	pack := spawnPack()
	s.run(48)
	o := w.get(player).obs
	id := w.looks[wolf].id
	if o.looks.len() != 1 || o.looks.at(0) != id {
		t.Fatalf("the connection holds looks %v, want the wolves' %d", lookIDs(&o.looks), id)
	}
	for _, id := range pack {
		_ = w.Despawn(id)
	}
	s.run(48)
	if lk := w.looks[wolf]; lk == nil || lk.id != id || lk.refs != 0 {
		t.Fatalf("the pack's look after it went: %+v, want id %d kept with no entity", lk, id)
	}
	before := w.Stats().ReliableOut
	pack = spawnPack()
	s.run(48)
	for _, e := range pack {
		if v, ok := out.c.Entity(e); !ok || v.Display != wolf {
			t.Fatalf("risen wolf %d: known %v, display %+v", e, ok, v.Display)
		}
	}
	if o.looks.len() != 1 {
		t.Errorf("the connection holds %d looks after the pack rose, want the one", o.looks.len())
	}
	if sent := w.Stats().ReliableOut - before; sent > 4*8 {
		t.Errorf("the risen pack's display data took %d bytes, want references to the dictionary", sent)
	}

	// Setting the display an entity has keeps its look as it is: a shared
	// look its last entity has is not listed dormant, and a look one
	// entity has keeps its id and is not made shared.
	fox := Display{Name: "fox", Appearance: 11}
	f1, _ := w.Spawn(NPC, Logic{Pos: Vec{5000, 5000}, Life: 100}, fox)
	f2, _ := w.Spawn(NPC, Logic{Pos: Vec{5000, 5000}, Life: 100}, fox)
	_ = w.Despawn(f1)
	foxID := w.looks[fox].id
	if err := w.SetDisplay(f2, fox); err != nil {
		t.Fatal(err)
	}
	if lk := w.looks[fox]; lk == nil || lk.id != foxID || lk.refs != 1 || lk.listed {
		t.Errorf("the last fox's look after SetDisplay with its own display: %+v, want id %d, one entity, not listed dormant", lk, foxID)
	}
	_ = w.Despawn(f2)

	// A look never shared goes with its entity; dormant ones past the bound
	// are forgotten.
	lone, _ := w.Spawn(NPC, Logic{Pos: Vec{5000, 5000}, Life: 100}, Display{Name: "hermit"})
	loneID := w.looks[Display{Name: "hermit"}].id
	if err := w.SetDisplay(lone, Display{Name: "hermit"}); err != nil {
		t.Fatal(err)
	}
	if lk := w.looks[Display{Name: "hermit"}]; lk == nil || lk.id != loneID || lk.shared {
		t.Errorf("a lone look after SetDisplay with its own display: %+v, want id %d, not shared", lk, loneID)
	}
	_ = w.Despawn(lone)
	if w.looks[Display{Name: "hermit"}] != nil {
		t.Error("a look one entity had was kept after it went")
	}
	for i := range maxDormantLooks + 1 {
		d := Display{Appearance: uint32(1000 + i)}
		a, _ := w.Spawn(NPC, Logic{Pos: Vec{5000, 5000}}, d)
		b, _ := w.Spawn(NPC, Logic{Pos: Vec{5000, 5000}}, d)
		_ = w.Despawn(a)
		_ = w.Despawn(b)
		s.run(1)
	}
	if n := len(w.looks); n > maxDormantLooks/2 {
		t.Errorf("%d looks remembered after %d went dormant, want the dormant ones forgotten", n, maxDormantLooks+1)
	}

	// One pack dying and rising again and again counts once toward the
	// bound: another dormant look stays.
	bear := Display{Name: "bear", Appearance: 10}
	b1, _ := w.Spawn(NPC, Logic{Pos: Vec{5000, 5000}}, bear)
	b2, _ := w.Spawn(NPC, Logic{Pos: Vec{5000, 5000}}, bear)
	_, _ = w.Despawn(b1), w.Despawn(b2)
	for _, id := range pack {
		_ = w.Despawn(id)
	}
	listed := len(w.dormant)
	for range maxDormantLooks + 1 {
		pack = spawnPack()
		for _, id := range pack {
			_ = w.Despawn(id)
		}
	}
	if w.looks[bear] == nil || w.looks[wolf] == nil || len(w.dormant) != listed {
		t.Fatalf("after the pack died %d times: bear %v, wolf %v, %d listed dormant (%d before); want both kept, the wolves listed once",
			maxDormantLooks+1, w.looks[bear], w.looks[wolf], len(w.dormant), listed)
	}
}

// lookIDs lists the look numbers a connection's dictionary holds, by index.
func lookIDs(d *lookDict) []uint32 {
	ids := make([]uint32, d.len())
	for i := range ids {
		ids[i] = d.at(i)
	}
	return ids
}
