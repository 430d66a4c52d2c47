package replica

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestConvergence is the property of issue 8: after any seeded sequence of
// changes, lost, reordered and duplicated messages, and subscriber or
// publisher restarts at random points, every subscriber's copy equals the
// publisher's once traffic settles. A restart drops the process's memory
// and loads its file (or starts from nothing when it has none).
func TestConvergence(t *testing.T) {
	// A restart here is a process restart: the page cache survives it, so
	// the files need no fsync, and 1000 trials run in a second or two.
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	syncFile = func(*os.File) error { return nil }
	trials := 1000
	if testing.Short() {
		trials = 200
	}
	root := memDir(t)
	for trial := range trials {
		dir := filepath.Join(root, fmt.Sprint(trial))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := convergenceTrial(dir, uint64(trial)); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		os.RemoveAll(dir)
	}
}

// memDir returns a temporary directory in memory (/dev/shm, as the seed
// keeps its copies in shared memory) when the system has one, else on
// disk. On ext4 a rename over a file flushes it, which would make a
// thousand trials slow.
func memDir(t *testing.T) string {
	if d, err := os.MkdirTemp("/dev/shm", "replica-test-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return t.TempDir()
}

func convergenceTrial(dir string, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0x7e57))
	b := newTapBus()
	tb := &quietTB{}
	ring := 2 + rng.IntN(6)
	pubPath := ""
	if rng.IntN(4) > 0 { // most trials keep a publisher file
		pubPath = filepath.Join(dir, "world.rp")
	}
	pcfg := PublisherConfig{Ring: ring, MaxMessage: 64 + rng.IntN(400), CommitInterval: time.Second}
	if pubPath != "" {
		pcfg.Path = pubPath
	}
	now := t0
	w := newWorld(tb, b, pcfg)
	w.start(tb, now)
	nsubs := 1 + rng.IntN(3)
	scfg := make([]SubscriberConfig, nsubs)
	games := make([]*game, nsubs)
	for i := range games {
		scfg[i] = SubscriberConfig{ID: fmt.Sprintf("game-%d", i), ReportTimeout: time.Second, MaxReportInterval: 4 * time.Second, SaveInterval: time.Duration(1+rng.IntN(3)) * time.Second}
		if rng.IntN(4) > 0 {
			scfg[i].Path = filepath.Join(dir, fmt.Sprintf("game-%d.rp", i))
		}
		games[i] = newGame(tb, b, scfg[i])
		games[i].start(tb, now)
	}
	loss, dup := rng.Float64()*0.3, rng.Float64()*0.2
	steps := 20 + rng.IntN(40)
	ids := 4 + rng.IntN(12)
	for range steps {
		for range rng.IntN(4) {
			id := uint64(rng.IntN(ids))
			switch rng.IntN(6) {
			case 0:
				w.guilds.Delete(id)
			case 1:
				w.teams.Set(id, team{Leader: rng.Uint64() >> rng.IntN(64), Size: uint8(rng.IntN(6)), Dungeon: uint16(rng.IntN(4096))})
			case 2:
				w.teams.Delete(id)
			default:
				w.guilds.Set(id, guildN(rng.IntN(1000)))
			}
		}
		if rng.IntN(3) == 0 {
			w.pub.Commit()
		}
		now = now.Add(time.Duration(rng.IntN(700)) * time.Millisecond)
		w.pub.Tick(now)
		for _, g := range games {
			g.sub.Tick(now)
		}
		for range rng.IntN(12) {
			b.step(rng, loss, dup)
		}
		switch rng.IntN(20) {
		case 0: // a subscriber restarts
			i := rng.IntN(nsubs)
			if rng.IntN(2) == 0 {
				games[i].sub.Save() // a clean shutdown; else a crash
			}
			games[i].sub.Close()
			games[i] = newGame(tb, b, scfg[i])
			games[i].start(tb, now)
		case 1: // the publisher restarts; its pending changes are lost
			w.pub.Close()
			w = newWorld(tb, b, pcfg)
			w.start(tb, now)
		}
		if tb.err != nil {
			return tb.err
		}
	}
	// Traffic settles: the network still loses messages for a while, then
	// heals; heartbeats and report retries must bring everyone in.
	w.pub.Commit()
	for round := range 40 {
		now = now.Add(time.Second)
		w.pub.Tick(now)
		for _, g := range games {
			g.sub.Tick(now)
		}
		l := loss
		if round >= 10 {
			l = 0
		}
		for b.step(rng, l, 0) {
		}
	}
	for i, g := range games {
		if g.guilds.Version() != int64(w.guilds.Version()) || g.teams.Version() != int64(w.teams.Version()) {
			return fmt.Errorf("game-%d at guilds %d teams %d, publisher at %d %d (stats %+v, publisher %+v)",
				i, g.guilds.Version(), g.teams.Version(), w.guilds.Version(), w.teams.Version(), g.sub.Stats(), w.pub.Stats())
		}
		if !sameCollection(w.guilds, g.guilds) || !sameCollection(w.teams, g.teams) {
			return fmt.Errorf("game-%d differs from the publisher at the same versions %d %d", i, w.guilds.Version(), w.teams.Version())
		}
	}
	return nil
}

// quietTB lets the world and game helpers run outside a test's goroutine
// rules: it records the first failure instead of stopping.
type quietTB struct {
	testing.TB
	err error
}

func (q *quietTB) Helper() {}
func (q *quietTB) Fatal(args ...any) {
	if q.err == nil {
		q.err = fmt.Errorf("%s", fmt.Sprint(args...))
	}
}
