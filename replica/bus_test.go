package replica

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestLocalBusDeliversInOrder(t *testing.T) {
	b := NewLocalBus()
	defer b.Close()
	var mu sync.Mutex
	got := map[string][]byte{}
	for _, name := range []string{"a", "b"} {
		cancel, err := b.Subscribe("s", func(msg []byte) {
			mu.Lock()
			got[name] = append(got[name], msg[0])
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		defer cancel()
	}
	buf := []byte{0}
	for i := range 100 {
		buf[0] = byte(i)
		b.Publish("s", buf) // the bus copies: buf is reused
	}
	b.Publish("other", buf)
	b.Drain()
	for _, name := range []string{"a", "b"} {
		if len(got[name]) != 100 {
			t.Fatalf("%s got %d messages", name, len(got[name]))
		}
		for i, v := range got[name] {
			if int(v) != i {
				t.Fatalf("%s: message %d is %d", name, i, v)
			}
		}
	}
	if st := b.Stats(); st.Published != 101 || st.Delivered != 200 || st.Bytes != 200 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLocalBusMisbehavesAsConfigured(t *testing.T) {
	b := NewLocalBusWithConfig(LocalBusConfig{Seed: 3, Loss: 0.2, Reorder: 0.2, Duplicate: 0.2})
	defer b.Close()
	var got []byte
	cancel, _ := b.Subscribe("s", func(msg []byte) { got = append(got, msg[0]) })
	for i := range 200 {
		b.Publish("s", []byte{byte(i)})
	}
	b.Drain()
	cancel()
	seen, dups, inversions := map[byte]int{}, 0, 0
	for i, v := range got {
		if seen[v]++; seen[v] > 1 {
			dups++
		}
		if i > 0 && v < got[i-1] {
			inversions++
		}
	}
	lost := 200 - len(seen)
	if lost < 20 || lost > 60 || dups < 15 || inversions < 10 {
		t.Fatalf("lost %d, duplicated %d, reordered %d of 200", lost, dups, inversions)
	}
}

func TestLocalBusCancelAndClose(t *testing.T) {
	b := NewLocalBus()
	n := 0
	cancel, _ := b.Subscribe("s", func([]byte) { n++ })
	b.Publish("s", []byte{1})
	b.Drain()
	cancel()
	cancel() // twice is harmless
	b.Publish("s", []byte{1})
	b.Drain()
	if n != 1 {
		t.Fatalf("%d deliveries", n)
	}
	b.Close()
	if err := b.Publish("s", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
	if _, err := b.Subscribe("s", func([]byte) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("subscribe after close: %v", err)
	}
}

// TestOverLocalBus runs a publisher and three subscribers over a lossy
// LocalBus in a synctest bubble, with Tick driven by the fake clock, and
// restarts one subscriber from its file on the way.
func TestOverLocalBus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		b := NewLocalBusWithConfig(LocalBusConfig{Seed: 1, Loss: 0.1, Reorder: 0.1, Duplicate: 0.1})
		defer b.Close()
		w := newWorld(t, b, PublisherConfig{Ring: 32, MaxMessage: 512})
		w.start(t, time.Now())
		games := make([]*game, 3)
		cfgs := make([]SubscriberConfig, 3)
		for i := range games {
			// Retries back off to 1 s at most, not the default 8 s: the
			// copies must have caught up within the 5 s the test leaves
			// after the last change, whatever the bus's loss took.
			cfgs[i] = SubscriberConfig{ID: fmt.Sprintf("game-%d", i), Path: fmt.Sprintf("%s/game-%d", dir, i),
				ReportTimeout: 200 * time.Millisecond, MaxReportInterval: time.Second}
			games[i] = newGame(t, b, cfgs[i])
			games[i].start(t, time.Now())
		}
		for step := range 300 {
			if step < 200 {
				w.guilds.Set(uint64(step%40), guildN(step))
				if step%7 == 0 {
					w.guilds.Delete(uint64(step % 13))
				}
			}
			if step == 120 {
				games[1].sub.Close()
				games[1] = newGame(t, b, cfgs[1])
				games[1].start(t, time.Now())
			}
			time.Sleep(50 * time.Millisecond)
			w.pub.Tick(time.Now())
			for _, g := range games {
				g.sub.Tick(time.Now())
			}
			synctest.Wait()
		}
		for i, g := range games {
			if g.guilds.Version() != int64(w.guilds.Version()) || !sameCollection(w.guilds, g.guilds) {
				t.Errorf("game-%d at %d, publisher at %d (%+v)", i, g.guilds.Version(), w.guilds.Version(), g.sub.Stats())
			}
		}
		if st := games[1].sub.Stats(); st.FullLoads != 0 {
			t.Errorf("game-1 took %d snapshots after its restart from a file", st.FullLoads)
		}
	})
}
