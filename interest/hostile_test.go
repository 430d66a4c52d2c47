package interest

import (
	"errors"
	"math/bits"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/transport/memnet"
)

// uplinkBytes encodes an uplink packet as a client would, without the
// client's checks, so a test can send what a hostile client would.
func uplinkBytes(t testing.TB, w *World, u *uplink) []byte {
	var wr codec.Writer
	u.encode(&w.lay, &wr)
	if wr.Err() != nil {
		t.Fatalf("encode: %v", wr.Err())
	}
	return append([]byte(nil), wr.Bytes()...)
}

// TestHostileUplink sends the packets a hostile client would and checks
// each is dropped with its counted reason, while an honest client in the
// same world is unaffected.
func TestHostileUplink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, harnessOptions{cfg: testConfig(), players: 2, npcs: 50, seed: 3})
		h.run(2*time.Second, false)
		bad, honest := h.players[0], h.players[1]
		far := ID(0)
		for _, id := range h.npcs {
			if !h.w.InRange(bad.id, id) {
				far = id
				break
			}
		}
		me, _ := h.w.Logic(bad.id)
		f := h.w.Frame()
		cases := []struct {
			name   string
			msg    []byte
			reason int
		}{
			{"garbage", []byte{0xff, 0x13, 0x77}, DropMalformed},
			{"empty", nil, DropMalformed},
			{"truncated", uplinkBytes(t, h.w, &uplink{cmds: []command{{tag: cmdMove, frame: f, src: me.Pos, dest: me.Pos, speed: 1}}})[:3], DropMalformed},
			{"off map", uplinkBytes(t, h.w, &uplink{firstSeq: 1, cmds: []command{{tag: cmdMove, frame: f, src: Vec{h.w.lay.maxX + 1, 10}, dest: Vec{h.w.lay.maxX + 1, 10}}}}), DropOffMap},
			{"speed over the maximum", speedOver(t, h.w, f, me.Pos), DropMalformed},
			{"far past", uplinkBytes(t, h.w, &uplink{firstSeq: 3, cmds: []command{{tag: cmdJump, frame: f - 2000}}}), DropStale},
			{"future", uplinkBytes(t, h.w, &uplink{firstSeq: 4, cmds: []command{{tag: cmdJump, frame: f + 500}}}), DropFuture},
			{"unknown id", uplinkBytes(t, h.w, &uplink{discover: []uint32{4000}}), DropUnknown},
			{"out of range", uplinkBytes(t, h.w, &uplink{discover: []uint32{uint32(far)}}), DropOutOfRange},
			{"skill target", uplinkBytes(t, h.w, &uplink{firstSeq: 5, cmds: []command{{tag: cmdSkill, frame: f, skill: 1, target: 4001}}}), DropUnknown},
			{"ack of the future", uplinkBytes(t, h.w, &uplink{hasAck: true, ackSeq: 900}), DropAck},
		}
		for _, tc := range cases {
			before := h.w.Stats().Dropped[tc.reason]
			err := h.w.Deliver(bad.id, tc.msg)
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			if got := h.w.Stats().Dropped[tc.reason] - before; got != 1 {
				t.Errorf("%s: %s drops went up by %d, want 1 (err %v)", tc.name, DropName(tc.reason), got, err)
			}
		}
		// A discovery flood: far more requests than the rate allows.
		ids := make([]uint32, 0, maxUpDiscover)
		for _, id := range h.npcs[:maxUpDiscover] {
			ids = append(ids, uint32(id))
		}
		before := h.w.Stats().Dropped[DropRate]
		for range 20 {
			_ = h.w.Deliver(bad.id, uplinkBytes(t, h.w, &uplink{discover: ids}))
		}
		if h.w.Stats().Dropped[DropRate] == before {
			t.Error("a discovery flood was not rate-limited")
		}
		if q := len(h.w.ent(bad.id).obs.queue); q > maxQueue {
			t.Errorf("queue of %d after a flood", q)
		}
		if !errors.Is(h.w.Deliver(far, nil), ErrNotObserver) {
			t.Error("an entity with no client was accepted as one")
		}
		// The honest client plays on.
		h.run(3*time.Second, false)
		if _, ok := honest.c.Self(); !ok || honest.c.Stats().Malformed != 0 {
			t.Errorf("honest client hurt: %+v", honest.c.Stats())
		}
		if h.leaks > 0 {
			t.Errorf("%d leaks", h.leaks)
		}
	})
}

// TestMovementValidation: a teleporting or speed-hacking client is
// corrected and ends where the world says; honest clients with up to
// 150 ms of latency are almost never corrected.
func TestMovementValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 75 * time.Millisecond, Jitter: 20 * time.Millisecond}
		h := newHarness(t, harnessOptions{cfg: testConfig(), players: 12, npcs: 100, link: link, seed: 5})
		h.run(60*time.Second, false)
		moves := int64(0)
		for _, p := range h.players {
			moves += int64(p.c.nextCmd)
		}
		if c := h.w.Stats().Corrections; c > moves/100 {
			t.Errorf("%d corrections of honest clients in %d moves at 150 ms RTT", c, moves)
		} else {
			t.Logf("%d corrections in %d honest moves", c, moves)
		}

		cheat := h.players[0]
		cheat.b = idle
		me, _ := cheat.c.Self()
		// Teleport: claim to be somewhere else.
		cheat.c.me.Pos = me.Pos.Add(Vec{3000, 0})
		cheat.c.me.Pos.X = min(cheat.c.me.Pos.X, h.w.lay.maxX)
		before := h.w.ent(cheat.id).obs.corrections
		if err := cheat.c.Move(cheat.c.me.Pos.Add(Vec{-10, 0}), 4); err != nil {
			t.Fatal(err)
		}
		h.run(time.Second, false)
		if h.w.ent(cheat.id).obs.corrections == before {
			t.Error("a teleport was not corrected")
		}
		srv, _ := h.w.Logic(cheat.id)
		cli, _ := cheat.c.Self()
		if srv.Pos.DistSq(cli.Pos) > int64(h.cfg.Tolerance*h.cfg.Tolerance) {
			t.Errorf("after correction the client is at %v, the world at %v", cli.Pos, srv.Pos)
		}
		// Speed hack: move faster than declared.
		before = h.w.ent(cheat.id).obs.corrections
		for range 10 {
			cheat.c.me.Pos = cheat.c.me.Pos.Add(Vec{200, 0})
			cheat.c.me.Pos.X = min(cheat.c.me.Pos.X, h.w.lay.maxX)
			_ = cheat.c.Move(cheat.c.me.Pos.Add(Vec{50, 0}), 2)
			h.run(200*time.Millisecond, false)
		}
		if h.w.ent(cheat.id).obs.corrections == before {
			t.Error("a speed hack was not corrected")
		}
	})
}

// FuzzUplink feeds arbitrary bytes to World.Deliver: no panic, and a
// malformed packet is counted.
func FuzzUplink(f *testing.F) {
	w, err := NewWorld(testConfig(), time.Unix(0, 0), discard{})
	if err != nil {
		f.Fatal(err)
	}
	id, _ := w.Spawn(Player, Logic{Pos: Vec{500, 500}}, Display{})
	_ = w.Join(id)
	f.Add(uplinkBytes(f, w, &uplink{firstSeq: 1, cmds: []command{{tag: cmdMove, src: Vec{500, 500}, dest: Vec{600, 500}, speed: 8}}}))
	f.Add(uplinkBytes(f, w, &uplink{discover: []uint32{1, 2, 3}, display: []uint32{1}}))
	f.Add(uplinkBytes(f, w, &uplink{hasAck: true, ackSeq: 1, ackMask: 7, firstSeq: 9,
		cmds: []command{{tag: cmdCustom, ctag: 3, data: []byte("hi")}, {tag: cmdSkill, skill: 9, target: id}}}))
	f.Add([]byte{0xa5})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = w.Deliver(id, b)
		w.Tick(time.Unix(0, 0).Add(time.Duration(w.Frame()+1) * w.cfg.Period()))
	})
}

// FuzzDownlink feeds arbitrary bytes to Client.Deliver.
func FuzzDownlink(f *testing.F) {
	rec := &recorder{}
	w, err := NewWorld(testConfig(), time.Unix(0, 0), rec)
	if err != nil {
		f.Fatal(err)
	}
	me, _ := w.Spawn(Player, Logic{Pos: Vec{1500, 1500}}, Display{Name: "me"})
	_ = w.Join(me)
	for i := range 20 {
		id, _ := w.Spawn(NPC, Logic{Pos: Vec{int32(1000 + 60*i), 1600}, Life: 50}, Display{Name: "npc"})
		_ = w.Move(id, Vec{2000, 2000}, 8)
		_ = w.Skill(id, 3, me)
		_ = w.Custom(id, 1, []byte{1, 2})
	}
	for n := 1; n <= 40; n++ {
		w.Tick(time.Unix(0, 0).Add(time.Duration(n) * w.cfg.Period()))
	}
	// Fights, whose state syncs are vitals messages.
	for id := ID(2); id < 6; id++ {
		_ = w.Update(id, func(lg *Logic) { lg.Life, lg.Combat = 20, true })
	}
	for n := 41; n <= 80; n++ {
		w.Tick(time.Unix(0, 0).Add(time.Duration(n) * w.cfg.Period()))
	}
	// Display replies, the second referring to names the first sent.
	for _, ids := range [][]uint32{{2, 3}, {4, 5, 6}} {
		_ = w.Deliver(me, uplinkBytes(f, w, &uplink{display: ids}))
	}
	for _, m := range rec.msgs {
		f.Add(m)
	}
	first := rec.msgs[0] // the whole logic of what is in range: moves that go on resolve against it
	f.Fuzz(func(t *testing.T, b []byte) {
		c, _ := NewClient(testConfig(), me)
		_ = c.Deliver(time.Unix(1, 0), b)
		c, _ = NewClient(testConfig(), me) // and after the world's first packet
		_ = c.Deliver(time.Unix(1, 0), first)
		_ = c.Deliver(time.Unix(1, 0), b)
		c.Advance(time.Unix(2, 0))
		_ = c.Packet(time.Unix(2, 0))
	})
}

// speedOver builds a move whose speed field holds a value over the
// maximum: the encoder refuses to, so write the bits by hand.
func speedOver(t testing.TB, w *World, f int, pos Vec) []byte {
	var wr codec.Writer
	l := &w.lay
	wr.WriteBits(kindUp, kindBits)
	wr.WriteBool(false)
	wr.WriteUint(1, maxUpCommands)
	wr.WriteBits(7, 16)
	wr.WriteBits(cmdMove, cmdBits)
	wr.WriteBits(uint64(f), frameBits)
	l.writePos(&wr, pos)
	wr.WriteBool(true)
	m := int64(l.cfg.MaxMove)
	wr.WriteInt(100, -m, m)
	wr.WriteInt(0, -m, m)
	n := bits.Len(uint(l.cfg.MaxSpeed))
	wr.WriteBits(1<<n-1, n) // all ones: over MaxSpeed unless it is 2^n-1
	wr.WriteIDs(nil, maxUpDiscover)
	wr.WriteIDs(nil, maxUpDisplay)
	return append([]byte(nil), wr.Bytes()...)
}

type discard struct{}

func (discard) SendUnreliable(ID, []byte) error { return nil }
func (discard) SendReliable(ID, []byte) error   { return nil }

type recorder struct{ msgs [][]byte }

func (r *recorder) SendUnreliable(_ ID, b []byte) error {
	r.msgs = append(r.msgs, append([]byte(nil), b...))
	return nil
}
func (r *recorder) SendReliable(_ ID, b []byte) error { return r.SendUnreliable(0, b) }

// TestAckBeforeAnyWrap: early in a connection, an acknowledgement whose
// sequence number unwraps to before the first packet (1023 after one
// packet: -1) is dropped as one of a packet never sent, not looked up.
func TestAckBeforeAnyWrap(t *testing.T) {
	w, err := NewWorld(testConfig(), time.Unix(0, 0), discard{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := w.Spawn(Player, Logic{Pos: Vec{1000, 1000}, Life: 100}, Display{Name: "p"})
	if err := w.Join(p); err != nil {
		t.Fatal(err)
	}
	w.Tick(time.Unix(0, 0).Add(w.Config().Period()))
	if seq := w.get(p).obs.seq; seq < 1 || seq > 8 {
		t.Fatalf("the world sent %d packets in its first frame, want a few", seq)
	}
	for _, ack := range []int{1023, 1000, 1024 - ringSize} {
		before := w.Stats().Dropped[DropAck]
		if err := w.Deliver(p, uplinkBytes(t, w, &uplink{hasAck: true, ackSeq: ack})); err == nil {
			t.Errorf("ack of %d accepted", ack)
		}
		if w.Stats().Dropped[DropAck] != before+1 {
			t.Errorf("ack of %d: not counted as a bad acknowledgement", ack)
		}
	}
}

// TestSpeedLimitHistory: the world checks a move's speed against the
// player's limit at the move's frame, kept with the movement history
// (seed 5.2.1): a move faster than the limit is a speed hack, dropped and
// corrected; a move stamped before a slow took effect, at the old limit,
// passes.
func TestSpeedLimitHistory(t *testing.T) {
	start := time.Unix(0, 0)
	w, err := NewWorld(testConfig(), start, discard{})
	if err != nil {
		t.Fatal(err)
	}
	pos := Vec{500, 500}
	id, _ := w.Spawn(Player, Logic{Pos: pos, Dest: pos}, Display{})
	if err := w.Join(id); err != nil {
		t.Fatal(err)
	}
	at := func(f int) time.Time { return start.Add(time.Duration(f) * w.cfg.Period()) }
	w.Tick(at(10))
	if err := w.SetSpeedLimit(id, 16); err != nil { // running, from frame 10
		t.Fatal(err)
	}
	w.Tick(at(30))
	if err := w.SetSpeedLimit(id, 8); err != nil { // slowed, from frame 30
		t.Fatal(err)
	}
	w.Tick(at(33))
	seq := uint16(1)
	move := func(frame int, speed int32) (dropped bool, corrected bool) {
		before, corr := w.Stats().Dropped[DropSpeed], w.ent(id).obs.corrections
		cur, _ := w.Logic(id)
		u := &uplink{firstSeq: seq, cmds: []command{{tag: cmdMove, frame: frame, src: w.ent(id).obs.at(frame), dest: cur.Pos.Add(Vec{300, 0}), speed: speed}}}
		seq++
		w.Deliver(id, uplinkBytes(t, w, u))
		return w.Stats().Dropped[DropSpeed] > before, w.ent(id).obs.corrections > corr
	}
	if d, c := move(28, 16); d || c {
		t.Errorf("a move at 16 stamped at frame 28, when the limit was 16: dropped %v, corrected %v", d, c)
	}
	if lg, _ := w.Logic(id); lg.Speed != 16 || !lg.Moving() {
		t.Errorf("the accepted move: %+v", lg)
	}
	if d, c := move(32, 16); !d || !c {
		t.Errorf("a move at 16 stamped at frame 32, when the limit was 8: dropped %v, corrected %v", d, c)
	}
	if d, _ := move(33, 32); !d {
		t.Error("a move at twice the limit passed")
	}
	for _, bad := range []int32{0, -1, int32(w.cfg.MaxSpeed) + 1} {
		if err := w.SetSpeedLimit(id, bad); !errors.Is(err, ErrConfig) {
			t.Errorf("limit %d: %v", bad, err)
		}
	}
	npc, _ := w.Spawn(NPC, Logic{Pos: pos, Dest: pos}, Display{})
	if err := w.SetSpeedLimit(npc, 8); !errors.Is(err, ErrNotObserver) {
		t.Errorf("an NPC: %v", err)
	}
}
