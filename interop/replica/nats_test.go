//go:build !js

package replica_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/natsbus"
	"github.com/tongbu/tongbu/replica"
	"github.com/tongbu/tongbu/replica/replicatest"
)

var _ replica.Bus = (*natsbus.Bus)(nil)

// TestOverNATS runs the replica protocol over a real NATS server, each
// side on its own connection as separate processes would be: a game
// server's copy follows the world's guilds by deltas, and a restarted game
// server resumes from its file with the deltas it missed, without a full
// snapshot.
func TestOverNATS(t *testing.T) {
	srv := natstest.Server(t)
	pubBus := natsbus.New(natstest.Conn(t, srv))
	dir := t.TempDir()

	world, err := replica.NewPublisher(pubBus, replica.PublisherConfig{Name: "world", Path: filepath.Join(dir, "world.rep")})
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	guilds, err := replica.NewSource[replicatest.Guild](world, "guilds")
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 200; id++ {
		if err := guilds.Set(id, replicatest.Guild{Name: "guild", Level: uint8(id % 100), Members: uint16(id)}); err != nil {
			t.Fatal(err)
		}
	}
	world.Start(time.Now())

	subPath := filepath.Join(dir, "game.rep")
	start := func() (*replica.Subscriber, *replica.Mirror[replicatest.Guild, *replicatest.Guild]) {
		bus := natsbus.New(natstest.Conn(t, srv))
		sub, err := replica.NewSubscriber(bus, replica.SubscriberConfig{Publisher: "world", ID: "game-1", Path: subPath})
		if err != nil {
			t.Fatal(err)
		}
		m, err := replica.NewMirror[replicatest.Guild](sub, "guilds")
		if err != nil {
			t.Fatal(err)
		}
		sub.Start(time.Now())
		return sub, m
	}
	// settle ticks both sides until the copy equals the source, or fails
	// after a generous wait (the network is real; no timing is asserted).
	settle := func(sub *replica.Subscriber, m *replica.Mirror[replicatest.Guild, *replicatest.Guild]) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			now := time.Now()
			world.Tick(now)
			sub.Tick(now)
			if m.Version() == int64(guilds.Version()) && m.Len() == guilds.Len() {
				same := true
				guilds.Range(func(id uint64, g replicatest.Guild) bool {
					got, ok := m.Get(id)
					same = ok && got == g
					return same
				})
				if same {
					return
				}
			}
			if now.After(deadline) {
				t.Fatalf("copy at version %d with %d guilds; the world is at %d with %d", m.Version(), m.Len(), guilds.Version(), guilds.Len())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	sub, mirror := start()
	settle(sub, mirror)
	for round := range 5 {
		for id := uint64(1 + round); id <= 200; id += 7 {
			g, _ := guilds.Get(id)
			g.Members++
			if err := guilds.Set(id, g); err != nil {
				t.Fatal(err)
			}
		}
		guilds.Delete(uint64(100 + round))
		world.Commit()
		settle(sub, mirror)
	}
	if st := sub.Stats(); st.FullLoads != 1 || st.Deltas < 5 {
		t.Errorf("first run: %d full loads (want the initial one), %d deltas", st.FullLoads, st.Deltas)
	}
	if err := sub.Save(); err != nil {
		t.Fatal(err)
	}
	sub.Close()

	// Changes while the game server is down, then a restart from its file.
	for id := uint64(1); id <= 50; id++ {
		g, _ := guilds.Get(id)
		g.Funds += 10
		if err := guilds.Set(id, g); err != nil {
			t.Fatal(err)
		}
		if id%10 == 0 {
			world.Commit()
		}
	}
	sub, mirror = start()
	defer sub.Close()
	settle(sub, mirror)
	if st := sub.Stats(); st.FullLoads != 0 || st.Deltas == 0 {
		t.Errorf("restart: %d full loads, %d deltas; want the missed deltas only", st.FullLoads, st.Deltas)
	}
}
