package roomidle

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
)

func init() {
	harness.Register("room-idle",
		"a lockstep room whose players are connected and idle for a simulated hour: the room's memory per hour beside the same frames in a replay file",
		benchRoomIdle)
}

// mailbox is a room's sender that hands each message straight to the
// client in its slot, on the simulated clock.
type mailbox struct{ q [][][]byte }

func (m *mailbox) SendUnreliable(peer int, msg []byte) error {
	m.q[peer] = append(m.q[peer], append([]byte(nil), msg...))
	return nil
}
func (m *mailbox) SendReliable(peer int, msg []byte) error { return m.SendUnreliable(peer, msg) }

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func benchRoomIdle(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("room-idle", flag.ContinueOnError)
	players := fs.Int("players", 2, "players in the room, all connected and idle")
	hz := fs.Int("hz", 15, "the room's frame rate")
	minutes := fs.Float64("minutes", 60, "simulated time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *players < 1 || *players > lockstep.MaxPlayers || *hz < 1 || *minutes <= 0 {
		return errors.New("want 1 <= -players <= 32, -hz >= 1, -minutes > 0")
	}
	cfg := lockstep.Config{Players: *players, Hz: *hz}.WithDefaults()
	start := time.Unix(1_700_000_000, 0)
	box := &mailbox{q: make([][][]byte, cfg.Players)}
	before := liveHeap()
	room, err := lockstep.NewRoom(cfg, start, box)
	if err != nil {
		return err
	}
	var rec countWriter
	rw, err := replay.NewWriter(&rec, replay.Header{Game: "idle", Config: cfg, Start: start})
	if err != nil {
		return err
	}
	if err := room.Record(rw); err != nil {
		return err
	}
	clients := make([]*lockstep.Client, cfg.Players)
	for i := range clients {
		if clients[i], err = lockstep.NewClient(cfg, i); err != nil {
			return err
		}
	}
	t0 := time.Now()
	frames := int(*minutes * 60 * float64(cfg.Hz))
	for n := range frames {
		now := start.Add(time.Duration(int64(n) * int64(time.Second) / int64(cfg.Hz)))
		for slot, c := range clients {
			for _, msg := range box.q[slot] {
				c.Deliver(now, msg)
			}
			box.q[slot] = box.q[slot][:0]
			c.Advance(now) // the game runs the frames; the players press nothing
			if err := room.Deliver(slot, c.Packet(now), now); err != nil {
				return fmt.Errorf("player %d: %w", slot, err)
			}
			for _, msg := range c.Outbox() {
				room.Deliver(slot, msg, now)
			}
		}
		room.Tick(now)
	}
	clients, box = nil, nil // the players' side lives in their browsers
	after := liveHeap()
	runtime.KeepAlive(room)
	hours := *minutes / 60
	roomMiB := float64(int64(after)-int64(before)) / (1 << 20) / hours
	replayMiB := float64(rec.n) / (1 << 20) / hours
	fmt.Fprintf(out, "room-idle: %d players at %d Hz, connected and idle, %g simulated minutes (%d frames, simulated in %v)\n\n",
		cfg.Players, cfg.Hz, *minutes, room.NextFrame(), time.Since(t0).Round(time.Millisecond))
	fmt.Fprintf(out, "                         MiB per hour\n")
	fmt.Fprintf(out, "the room (live heap)     %10.2f\n", roomMiB)
	fmt.Fprintf(out, "the frames as a replay   %10.2f   (baseline: what the same frames take stored compactly)\n\n", replayMiB)
	fmt.Fprintln(out, harness.Result("room-idle", "players", cfg.Players, "hz", cfg.Hz, "room_mib_per_hour", roomMiB, "replay_mib_per_hour", replayMiB))
	return nil
}
