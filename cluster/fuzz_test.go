//go:build !js

package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
)

// FuzzReadHandover: a transfer's state that is not a cell's handover is
// told apart, and one that is gives back its entity.
func FuzzReadHandover(f *testing.F) {
	f.Add(handoverState(7))
	f.Add([]byte("tongbu-cell\x00\x01"))
	f.Add([]byte("hp=7"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, ok := readHandover(b)
		if ok && string(handoverState(id)) != string(b) {
			t.Fatalf("%q read as entity %d", b, id)
		}
	})
	if id, ok := readHandover(handoverState(interest.ID(65535))); !ok || id != 65535 {
		f.Fatalf("round trip: %d %v", id, ok)
	}
}

// FuzzStates: a states message from a neighbour cell is split into its
// entities' states, or refused whole; what is accepted round-trips.
func FuzzStates(f *testing.F) {
	f.Add(appendState(appendState(nil, 7, []byte("gold=3")), 9, nil))
	f.Add([]byte{0x07, 0xff, 0xff, 0x03})
	f.Add([]byte{})
	w, err := interest.NewWorld(interest.Config{Width: 8, Height: 4}, time.Unix(0, 0), nil)
	if err != nil {
		f.Fatal(err)
	}
	mine, _ := w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 100, Y: 100}, Life: 100}, interest.Display{})
	var stranger interest.ID // an entity adopted that the world does not own
	c := &cellRunner{n: &Node{opts: (*Options)(nil).withDefaults()}, m: CellMap{Adopt: func(w *interest.World, id interest.ID, st []byte) {
		if id != mine {
			stranger = id
		}
	}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		c.takeStates(w, 1, b) // what a neighbour's message reaches: only entities the world owns
		if stranger != 0 {
			t.Fatalf("the game adopted entity %d, which the world does not own", stranger)
		}
		var again []byte
		if readStates(b, func(id interest.ID, st []byte) { again = appendState(again, id, st) }) != nil {
			return
		}
		// What was accepted, written again, reads the same (a uvarint on
		// the wire may be longer than needed: compare the rewritten form).
		var second []byte
		if err := readStates(again, func(id interest.ID, st []byte) { second = appendState(second, id, st) }); err != nil || string(second) != string(again) {
			t.Fatalf("%x read as %x, which reads as %x (%v)", b, again, second, err)
		}
	})
}

// FuzzWorldMessages: the world operations and replies a node decodes
// from NATS are checked or refused, never trusted.
func FuzzWorldMessages(f *testing.F) {
	f.Add([]byte(`{"op":"book","world":"town~1","player":"ann","state":"aGk=","ttl_ms":1000,"from":"a","transfer":"12"}`))
	f.Add([]byte(`{"op":"settle","world":"w","id":"99"}`))
	f.Add([]byte(`{"world":"w","url":"http://a.test","ticket":"t","id":"3","expires_ms":5}`))
	f.Add([]byte(`{"world":"w","cap":10,"config":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if op, err := decode[worldOp](b); err == nil {
			if op.Op != "book" && op.Op != "settle" && op.Op != "arrived" {
				t.Fatalf("op %q accepted", op.Op)
			}
			if op.Op == "book" && (len(op.Player) == 0 || len(op.State) > MaxState) {
				t.Fatalf("book %+v accepted", op)
			}
		}
		if rep, err := decode[worldReply](b); err == nil && rep.Ticket != "" && rep.Error == "" && !rep.Full && !rep.Missing {
			if checkURL(rep.URL) != nil || checkRoom(rep.World) != nil {
				t.Fatalf("reply %+v accepted", rep)
			}
		}
		if req, err := decode[WorldRequest](b); err == nil && (req.Cap < 1 || req.Cap > MaxWorldPlayers) {
			t.Fatalf("request %+v accepted", req)
		}
	})
}

// FuzzDirectoryMessages: the node events a directory reads from NATS
// (heartbeats, room events, room lists, leaves), and the answers a lobby
// reads (placements, kicks), are checked or refused; what a directory
// takes keeps it within its bounds (nodes tracked, rooms a node holds).
func FuzzDirectoryMessages(f *testing.F) {
	f.Add([]byte(`{"id":"a","instance":1,"url":"http://a.test","capacity":2,"rooms":1,"gen":3,"interval_ms":100,"players":10,"worlds":[{"name":"w","players":1,"cap":5}]}`))
	f.Add([]byte(`{"id":"a","instance":1,"gen":4,"op":"open","room":"r9"}`))
	f.Add([]byte(`{"id":"a","instance":1,"gen":4,"rooms":["r1","r2","r3"]}`))
	f.Add([]byte(`{"room":"r","node":"a","url":"http://a.test","tickets":{"p":"t"}}`))
	f.Add([]byte(`{"player":"ann","reason":"afk"}`))
	f.Add([]byte(`{"kicked":-3}`))
	s := newState(3, 4, 16)
	now := t0
	f.Fuzz(func(t *testing.T, b []byte) {
		now = now.Add(10 * time.Millisecond)
		if h, err := decode[heartbeat](b); err == nil {
			s.heartbeat(h, now)
		}
		if e, err := decode[roomEvent](b); err == nil {
			s.event(e)
		}
		if l, err := decode[roomList](b); err == nil {
			s.listed(l.ID, l)
		}
		if l, err := decode[leave](b); err == nil {
			s.leave(l)
		}
		if r, err := decode[createReply](b); err == nil && r.Error == "" && !r.Full && (checkURL(r.URL) != nil || len(r.Tickets) > MaxPlayers) {
			t.Fatalf("placement %+v accepted", r)
		}
		if k, err := decode[kickMsg](b); err == nil && (checkRoom(k.Player) != nil || len(k.Reason) > maxReason) {
			t.Fatalf("kick %+v accepted", k)
		}
		if r, err := decode[kickReply](b); err == nil && r.Kicked < 0 {
			t.Fatalf("kick reply %+v accepted", r)
		}
		decode[RoomRequest](b)
		s.expire(now)
		if len(s.nodes) > 4 {
			t.Fatalf("%d nodes tracked, bound 4", len(s.nodes))
		}
		for id, n := range s.nodes {
			if len(n.rooms) > n.hb.Capacity {
				t.Fatalf("node %s holds %d rooms of capacity %d", id, len(n.rooms), n.hb.Capacity)
			}
		}
		if len(s.lost) > 16 {
			t.Fatalf("%d lost rooms remembered, bound 16", len(s.lost))
		}
	})
}

// FuzzStandbyBatch: a stream batch from a primary (SPEC.md §11.4) is
// read frame by frame or refused; what it hands over is what a batch of
// those frames says.
func FuzzStandbyBatch(f *testing.F) {
	w := codec.NewWriter(nil)
	appendBatchRoom(w, "duel", time.Unix(5, 0), []lockstep.EncodedFrame{{Number: 3, Full: []byte{0x01}, FullBits: 1}, {Number: 4, Full: []byte{0xff, 0x03}, FullBits: 10}})
	f.Add(batchMessage(1, w))
	f.Add([]byte{streamBatch, 0x05, 0xff})
	f.Add([]byte{streamControl, '{'})
	f.Fuzz(func(t *testing.T, b []byte) {
		type got struct {
			name  string
			start int64
			fr    lockstep.EncodedFrame
		}
		var frames []got
		if readBatch(b, func(name string, start int64, fr lockstep.EncodedFrame) {
			frames = append(frames, got{name, start, fr})
		}) != nil {
			return
		}
		for _, g := range frames {
			if checkRoom(g.name) != nil || g.fr.FullBits > len(g.fr.Full)*8 || g.fr.FullBits > maxBodyBits {
				t.Fatalf("read %+v", g)
			}
		}
		// Written again frame by frame, it reads the same.
		again := codec.NewWriter(nil)
		for _, g := range frames {
			appendBatchRoom(again, g.name, time.Unix(0, g.start), []lockstep.EncodedFrame{g.fr})
		}
		var second []got
		if err := readBatch(batchMessage(len(frames), again), func(name string, start int64, fr lockstep.EncodedFrame) {
			second = append(second, got{name, start, fr})
		}); err != nil || fmt.Sprint(second) != fmt.Sprint(frames) {
			t.Fatalf("%x: %v, then %v (%v)", b, frames, second, err)
		}
	})
}

// FuzzStandbyControl: a standby control message decodes into one that
// validates, or is refused.
func FuzzStandbyControl(f *testing.F) {
	f.Add([]byte(`{"op":"room","room":"duel","seats":[{"player":"ann","slot":1,"resume":[1,2]}]}`))
	f.Add([]byte(`{"op":"handover","room":"duel","next":99}`))
	f.Add([]byte(`{"op":"room","room":"","seats":[{"slot":-1}]}`))
	f.Add([]byte(`{"op":"world","room":"keep","cap":10,"config":{"hz":16}}`))
	f.Add([]byte(`{"op":"wprepare","room":"keep","cap":10,"start_ns":1}`))
	f.Add([]byte(`{"op":"whandover","room":"keep","rev":"7","checkpoint":"dG9uZ2J1"}`))
	f.Add([]byte(`{"op":"world","room":"keep","cap":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decode[standbyControl](b)
		if err != nil {
			return
		}
		if checkRoom(c.Room) != nil || len(c.Seats) > lockstep.MaxPlayers || c.Cap < 0 || c.Cap > MaxWorldPlayers {
			t.Fatalf("accepted %+v", c)
		}
		for _, s := range c.Seats {
			if s.Slot < 0 || s.Slot >= lockstep.MaxPlayers || s.Player == "" {
				t.Fatalf("accepted seat %+v", s)
			}
		}
	})
}

// FuzzBorderMessage: a border message's envelope (from NATS, which anyone
// may publish on) reads or fails with an error; one read is written back
// the same by the cell that sends it.
func FuzzBorderMessage(f *testing.F) {
	c := &cellRunner{epoch: 0x0123456789abcdef}
	f.Add(append(c.envelope(nil, cellBorderAt, 300), 1, 2, 3))
	f.Add(append(c.envelope(nil, cellStatesAt, 0), appendState(nil, 7, []byte("gold=3"))...))
	f.Add([]byte{cellBorder, 5})
	f.Add([]byte{cellBorderAt, 1, 2})
	f.Add([]byte{9})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return // onBorder drops an empty message before
		}
		m, err := readBorderMsg(b)
		if err != nil || !m.framed {
			return
		}
		kind := byte(cellBorderAt)
		if m.states {
			kind = cellStatesAt
		}
		c := &cellRunner{epoch: m.epoch}
		again, _ := readBorderMsg(append(c.envelope(nil, kind, m.frame), m.data...))
		if again.epoch != m.epoch || again.frame != m.frame || string(again.data) != string(m.data) || again.states != m.states {
			t.Fatalf("%x read as %+v, written back as %+v", b, m, again)
		}
	})
}

// FuzzCellState: a cell's part of a checkpoint (from the bucket) loads or
// fails with an error, never with a neighbour outside the map; one that
// loads is written back to the same neighbours, epochs and frames.
func FuzzCellState(f *testing.F) {
	m := CellMap{Map: "wild", Cols: 3, Rows: 1}
	c := &cellRunner{m: m, epoch: 42, peers: map[int]*cellPeer{1: {epoch: 7, last: 99}, 2: {epoch: 8, last: -1}}}
	f.Add(c.appendState([]byte("game")))
	f.Add([]byte{cellStateVersion})
	f.Add([]byte{cellStateVersion, 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &cellRunner{m: m}
		game, err := c.loadState(b)
		if err != nil {
			return
		}
		for j, p := range c.peers {
			if j < 0 || j >= m.Cells() || p.last < -1 {
				t.Fatalf("%x loaded neighbour %d at frame %d", b, j, p.last)
			}
		}
		d := &cellRunner{m: m}
		game2, err := d.loadState(c.appendState(game))
		if err != nil || d.epoch != c.epoch || len(d.peers) != len(c.peers) || string(game2) != string(game) {
			t.Fatalf("%x loaded as %d %v, written back as %d %v (%v)", b, c.epoch, c.peers, d.epoch, d.peers, err)
		}
		for j, p := range c.peers {
			if q := d.peers[j]; q == nil || *q != *p {
				t.Fatalf("neighbour %d: %+v written back as %+v", j, p, q)
			}
		}
	})
}
