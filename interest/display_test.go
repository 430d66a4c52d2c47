package interest

import (
	"errors"
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
	cfg := Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	out := &direct{}
	w, err := NewWorld(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	player, _ := w.Spawn(Player, Logic{Pos: Vec{1000, 1000}, Life: 100}, Display{Name: "you"})
	npc, _ := w.Spawn(NPC, Logic{Pos: Vec{1500, 900}, Life: 100}, Display{Name: "wolf", Appearance: 1})
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	out.c, _ = NewClient(cfg, player)
	run := (&stepper{t: t, w: w, out: out, player: player, start: start}).run
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
		l.writeID(&wr, en.e.id)
		writeUsual(&wr, uint64(en.e.ver), 0, 255)
		writeLook(&wr, &wlooks, &wnames, en.look, en.shared, &en.e.d)
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
	if len(looks) != 3 || len(wlooks.ids) != 3 || looks[0] != wolf {
		t.Errorf("looks %+v (world side holds %d), want the three shared ones", looks, len(wlooks.ids))
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
		l.writeID(&bad, 9)
		writeUsual(&bad, 0, 0, 255)
		writeLook(&bad, &fl, &fn, 1, true, &Display{Name: "bear"})
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
