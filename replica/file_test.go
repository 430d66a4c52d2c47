package replica

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSubscriberRestartAsksOnlyForWhatItMissed(t *testing.T) {
	dir := t.TempDir()
	b := newTapBus()
	w := newWorld(t, b, PublisherConfig{Ring: 16})
	w.start(t, t0)
	commitGuilds(t, w, 5)
	g := newGame(t, b, SubscriberConfig{Path: filepath.Join(dir, "game")})
	g.start(t, t0)
	b.flush()
	if err := g.sub.Save(); err != nil {
		t.Fatal(err)
	}
	g.sub.Close() // the process goes away
	commitGuilds(t, w, 3)
	b.take("") // it missed deltas 6-8
	g = newGame(t, b, SubscriberConfig{Path: filepath.Join(dir, "game")})
	g.start(t, t0)
	if v := g.guilds.Version(); v != 5 {
		t.Fatalf("restarted at version %d, want 5 from the file", v)
	}
	b.flush()
	if g.guilds.Version() != 8 || !sameCollection(w.guilds, g.guilds) {
		t.Fatalf("version %d after the answer", g.guilds.Version())
	}
	if st := g.sub.Stats(); st.FullLoads != 0 || st.Deltas != 3 {
		t.Fatalf("restarted subscriber took %d snapshots and %d deltas, want 0 and 3", st.FullLoads, st.Deltas)
	}
}

func TestPublisherRestartContinuesItsHistory(t *testing.T) {
	dir := t.TempDir()
	b := newTapBus()
	cfg := PublisherConfig{Ring: 8, Path: filepath.Join(dir, "world")}
	w := newWorld(t, b, cfg)
	w.start(t, t0)
	commitGuilds(t, w, 4)
	g := newGame(t, b, SubscriberConfig{})
	g.start(t, t0)
	b.flush()
	epoch := w.pub.Epoch()
	commitGuilds(t, w, 3)
	b.take("")                   // the subscriber misses 5-7
	w.guilds.Set(99, guildN(99)) // never committed: lost with the process
	w.pub.Close()

	w = newWorld(t, b, cfg)
	w.start(t, t0)
	if w.pub.Epoch() != epoch || w.guilds.Version() != 7 {
		t.Fatalf("restarted at epoch %x version %d, want %x 7", w.pub.Epoch(), w.guilds.Version(), epoch)
	}
	if _, ok := w.guilds.Get(99); ok {
		t.Fatal("an uncommitted change survived the restart")
	}
	b.flush() // heads: the subscriber learns it is behind
	g.sub.Tick(t0.Add(DefaultReportTimeout))
	b.flush()
	if g.guilds.Version() != 7 || !sameCollection(w.guilds, g.guilds) {
		t.Fatalf("subscriber at %d", g.guilds.Version())
	}
	if st := g.sub.Stats(); st.FullLoads != 2 { // guilds and teams at the start only
		t.Fatalf("%d snapshots: the ring did not survive the restart", st.FullLoads)
	}
}

func TestPublisherWithoutFileStartsNewHistory(t *testing.T) {
	b := newTapBus()
	w := newWorld(t, b, PublisherConfig{})
	w.start(t, t0)
	commitGuilds(t, w, 4)
	g := newGame(t, b, SubscriberConfig{})
	g.start(t, t0)
	b.flush()
	w.pub.Close()
	w2 := newWorld(t, b, PublisherConfig{})
	w2.start(t, t0)
	if w2.pub.Epoch() == w.pub.Epoch() {
		t.Fatal("same epoch after a restart without a file")
	}
	commitGuilds(t, w2, 6)
	b.flush()
	g.sub.Tick(t0.Add(DefaultReportTimeout))
	b.flush()
	if g.guilds.Version() != 6 || !sameCollection(w2.guilds, g.guilds) {
		t.Fatalf("subscriber at %d", g.guilds.Version())
	}
}

func TestUnusableFilesStartFresh(t *testing.T) {
	dir := t.TempDir()
	b := newTapBus()
	pcfg := PublisherConfig{Path: filepath.Join(dir, "world")}
	w := newWorld(t, b, pcfg)
	w.start(t, t0)
	commitGuilds(t, w, 3)
	scfg := SubscriberConfig{Path: filepath.Join(dir, "game")}
	g := newGame(t, b, scfg)
	g.start(t, t0)
	b.flush()
	g.sub.Save()
	epoch := w.pub.Epoch()
	w.pub.Close()
	g.sub.Close()
	for _, name := range []string{"world", "game"} {
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-1] ^= 0x40
		os.WriteFile(p, data, 0o600)
		_, err = readFile(p, data[4])
		if !errors.Is(err, ErrBadFile) {
			t.Fatalf("%s: %v, want ErrBadFile", name, err)
		}
	}
	w = newWorld(t, b, pcfg)
	w.start(t, t0)
	if w.pub.Epoch() == epoch || w.guilds.Version() != 0 || w.pub.Stats().FileErrors != 1 {
		t.Fatalf("publisher on a corrupt file: epoch %x (was %x), version %d, stats %+v", w.pub.Epoch(), epoch, w.guilds.Version(), w.pub.Stats())
	}
	g = newGame(t, b, scfg)
	g.start(t, t0)
	if g.guilds.Version() != -1 || g.guilds.Len() != 0 || g.sub.Stats().FileErrors != 1 {
		t.Fatalf("subscriber on a corrupt file: version %d, %d guilds", g.guilds.Version(), g.guilds.Len())
	}
	// A file of other collections is refused too.
	other, err := NewSubscriber(b, SubscriberConfig{Publisher: "world", ID: "x", Path: filepath.Join(dir, "world"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	NewMirror[team](other, "teams")
	if err := other.load(); !errors.Is(err, ErrBadFile) {
		t.Fatalf("publisher file as a subscriber's: %v", err)
	}
}

func TestFailedSaveStartsNewHistory(t *testing.T) {
	dir := t.TempDir()
	b := newTapBus()
	w := newWorld(t, b, PublisherConfig{Path: filepath.Join(dir, "sub", "world")})
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	w.start(t, t0)
	epoch := w.pub.Epoch()
	os.RemoveAll(filepath.Join(dir, "sub"))
	w.guilds.Set(1, guildN(1))
	if err := w.pub.Commit(); err == nil {
		t.Fatal("commit saved into a removed directory")
	}
	if w.pub.Epoch() == epoch || w.pub.Stats().EpochChanges != 1 {
		t.Fatalf("epoch %x after a failed save (was %x)", w.pub.Epoch(), epoch)
	}
}

func TestAtomicWriteLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for i := range 3 {
		if err := writeFileAtomic(p, sealFile(kindSub, []byte{byte(i)})); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d entries in the directory", len(entries))
	}
	body, err := readFile(p, kindSub)
	if err != nil || len(body) != 1 || body[0] != 2 {
		t.Fatalf("body %v, %v", body, err)
	}
	if body, err := readFile(filepath.Join(dir, "missing"), kindSub); body != nil || err != nil {
		t.Fatalf("missing file: %v %v", body, err)
	}
}
