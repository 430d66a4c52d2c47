package replay_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
)

func TestTinyReplay(t *testing.T) {
	file := tinyReplay(t)
	rr, err := replay.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var checks, joins, leaves, others int
	for {
		_, err := rr.Next()
		for _, r := range rr.Records() {
			switch r.Kind {
			case replay.RecordCheck:
				checks++
				if len(r.Check.Others) > 0 && r.Check.Majority {
					others++
					if r.Check.Others[0].Slot != 1 || r.Check.Others[0].Hash != uint64(r.Frame)+1 || r.Check.Hash != uint64(r.Frame) {
						t.Fatalf("check %+v", r.Check)
					}
				}
			case replay.RecordJoin:
				joins++
			case replay.RecordLeave:
				leaves++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if checks < 70 || others < 20 || joins != 1 || leaves != 1 {
		t.Fatalf("%d checks (%d with dissent), %d joins, %d leaves", checks, others, joins, leaves)
	}
}

// tinyReplay records a room driven by hand: inputs, hash reports (one
// player off from frame 60), a leave and a join.
func tinyReplay(tb testing.TB) []byte {
	var buf bytes.Buffer
	start := time.Unix(0, 0)
	now := start
	cfg := lockstep.Config{Players: 3, HashEvery: 5}.WithDefaults()
	var clients []*lockstep.Client
	room, err := lockstep.NewRoom(cfg, start, directSender{&clients, &now})
	if err != nil {
		tb.Fatal(err)
	}
	rw, err := replay.NewWriter(&buf, replay.Header{Game: "chain", Config: cfg, Start: start, Params: []byte{1, 2}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := room.Record(rw); err != nil {
		tb.Fatal(err)
	}
	for p := range cfg.Players {
		c, _ := lockstep.NewClient(cfg, p)
		clients = append(clients, c)
	}
	away := func(p, n int) bool { return p == 2 && n >= 200 && n < 250 }
	for n := range 400 + 3*cfg.Hz { // and the time for the last comparisons
		now = start.Add(time.Duration(n) * cfg.Period())
		for p, c := range clients {
			if away(p, n) {
				continue
			}
			if n < 400 && n%(p+2) == 0 {
				c.Input(now, []byte{byte(n), byte(p)})
			}
			room.Deliver(p, c.Packet(now), now)
		}
		if n == 200 {
			room.Leave(2)
		}
		if n == 250 {
			clients[2], _ = lockstep.NewClient(cfg, 2)
			room.Join(2, now)
		}
		room.Tick(now)
		for p, c := range clients {
			if away(p, n) {
				continue
			}
			for _, f := range c.Advance(now).Frames {
				if f.Number%cfg.HashEvery == 0 {
					h := uint64(f.Number)
					if p == 1 && f.Number >= 60 {
						h++
					}
					c.ReportHash(f.Number, h)
				}
			}
			for _, m := range c.Outbox() {
				room.Deliver(p, m, now)
			}
		}
	}
	if err := rw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func FuzzReplayReader(f *testing.F) {
	file := tinyReplay(f)
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		rr, err := replay.NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		cfg := rr.Header().Config
		for n := 0; ; n++ {
			fr, err := rr.Next()
			if err != nil {
				return
			}
			if fr.Number != n || len(fr.Slots) != cfg.Players {
				t.Fatalf("frame %d decoded as %d with %d slots", n, fr.Number, len(fr.Slots))
			}
			for _, rec := range rr.Records() {
				if rec.Slot < 0 || rec.Slot >= cfg.Players || rec.Frame < 0 {
					t.Fatalf("record %+v", rec)
				}
			}
		}
	})
}
