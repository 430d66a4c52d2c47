//go:build !js

package engine

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestRoomStart checks each lockstep.Start policy through the server: a
// room made 20 s before anyone comes cuts nothing until its players
// arrive (the first, or all of them), and its first player then plays
// from frame 0; a room that starts when created has cut 20 s of frames.
// A spectator does not start a room.
func TestRoomStart(t *testing.T) {
	link := memnet.LinkConfig{Latency: 10 * time.Millisecond}
	for _, tc := range []struct {
		start lockstep.Start
		// frames cut before anyone came, after one player and a
		// spectator, and the first frame player 0 plays
		before, afterOne, firstFrame int
	}{
		{lockstep.StartFirstPlayer, 0, -1, 0},
		{lockstep.StartAllPlayers, 0, 0, 0},
		{lockstep.StartAtOnce, 300, -1, -1},
	} {
		t.Run(tc.start.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{})
				defer h.shutdown()
				if _, err := h.s.CreateRoom("r", lockstep.Config{Players: 2, Start: tc.start}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Second)
				cut := func() int {
					synctest.Wait()
					n, _ := strconv.Atoi(h.metric("tongbu_frames_cut_total"))
					return n
				}
				if got := cut(); got < tc.before || got > tc.before+1 {
					t.Fatalf("%d frames cut in an empty room's first 20 s, want %d", got, tc.before)
				}
				if _, err := h.join("watcher", "r", RoleSpectator, link); err != nil {
					t.Fatal(err)
				}
				p0, err := h.join("p0", "r", RolePlayer, link)
				if err != nil {
					t.Fatal(err)
				}
				frames := play(t, p0, 2*time.Second)
				if tc.afterOne >= 0 {
					if got := cut(); got != tc.afterOne || len(frames) > 0 {
						t.Fatalf("one player of two, 2 s: %d frames cut, %d played, want none", got, len(frames))
					}
					p1, err := h.join("p1", "r", RolePlayer, link)
					if err != nil {
						t.Fatal(err)
					}
					go play(t, p1, 2*time.Second)
					frames = play(t, p0, 2*time.Second)
				}
				if len(frames) == 0 {
					t.Fatal("the room's player played no frame")
				}
				if tc.firstFrame >= 0 && frames[0].Number != tc.firstFrame {
					t.Fatalf("the first player's first frame is %d, want %d", frames[0].Number, tc.firstFrame)
				}
				// Frame 0 is cut within a period of the start: 2 s at 15 Hz
				// is 30 frames, and no more than one besides.
				if got := cut(); tc.firstFrame >= 0 && (got < 28 || got > 32) {
					t.Fatalf("%d frames cut in the 2 s since the room started, want about 30", got)
				}
			})
		})
	}
}

// play runs c's game loop for d and returns the frames it played.
func play(t *testing.T, c *Client, d time.Duration) []lockstep.Frame {
	var frames []lockstep.Frame
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(16 * time.Millisecond) {
		now := time.Now()
		if err := c.Update(now); err != nil {
			t.Error(err)
			return frames
		}
		frames = append(frames, c.Lockstep().Advance(now).Frames...)
	}
	return frames
}
