//go:build !js

package engine

import (
	"context"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
)

// FuzzReadCheckpoint feeds checkpoints as a cluster's store may hold
// them (anyone who reaches it may write there, though the cluster seals
// its records): a bad one is refused whole, and a good one restores a
// world that ticks.
func FuzzReadCheckpoint(f *testing.F) {
	w, _ := interest.NewWorld(interest.Config{Width: 8, Height: 8}, time.Unix(0, 0), nil)
	w.Spawn(interest.Player, interest.Logic{Pos: interest.Vec{X: 10, Y: 10}, Dest: interest.Vec{X: 10, Y: 10}}, interest.Display{Name: "p"})
	f.Add(appendCheckpoint(nil, &checkpointRec{world: "w", start: time.Unix(1, 0), taken: time.Unix(2, 0), snap: w.AppendSnapshot(nil), game: []byte("g"),
		players: []checkpointPlayer{{player: "p", id: 1, session: time.Unix(3, 0), valid: [resumeCreds]uint64{7, 8}}}}))
	f.Add([]byte(checkpointMagic))
	s, err := NewServer(Config{Secret: testSecret, NoWebRTC: true})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ReadCheckpointInfo(b); err != nil {
			return
		}
		rw, err := s.RestoreWorld(WorldConfig{Interest: interest.Config{Width: 8, Height: 8}}, b)
		if err == nil {
			rw.Close()
		}
	})
}
