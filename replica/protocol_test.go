package replica

import (
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Each test here is one branch of seed 004's version protocol (section
// 2.2), on the publisher's side or the subscriber's.

// sendReport delivers a report from subscriber "game-1" to the publisher;
// guilds and teams are held as given.
func sendReport(b *tapBus, p *Publisher, guilds, teams held) {
	msg := encodeReport(nil, report{schema: p.schema, id: "game-1", held: []held{guilds, teams}})
	b.deliver(tapMsg{reportSubject("world"), codec.AppendFrame(nil, typeReport, msg)})
}

// commitGuilds makes n commits, each changing one guild.
func commitGuilds(t *testing.T, w *world, n int) {
	t.Helper()
	for i := range n {
		if err := w.guilds.Set(uint64(i%5), guildN(int(w.guilds.Version())+i+1)); err != nil {
			t.Fatal(err)
		}
		if err := w.pub.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// answers returns the sync messages the publisher sent to game-1 for the
// guilds.
func answers(t *testing.T, b *tapBus, w *world) []*syncMsg {
	t.Helper()
	var out []*syncMsg
	for _, m := range decodedSync(t, b.take(".sub.game-1"), w.pub.schema, 2) {
		if m.collection == 0 {
			out = append(out, m)
		}
	}
	return out
}

func started(t *testing.T, cfg PublisherConfig) (*tapBus, *world) {
	b := newTapBus()
	w := newWorld(t, b, cfg)
	w.start(t, t0)
	b.take("") // the heads of Start
	return b, w
}

func wantSync(t *testing.T, got []*syncMsg, full bool, fullVer, first uint64, deltas int) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("%d sync messages, want 1", len(got))
	}
	m := got[0]
	if m.withFull != full || full && m.fullVer != fullVer || m.first != first || len(m.deltas) != deltas {
		t.Fatalf("sync full=%v@%d first=%d deltas=%d, want full=%v@%d first=%d deltas=%d",
			m.withFull, m.fullVer, m.first, len(m.deltas), full, fullVer, first, deltas)
	}
}

func TestSnapshotClosesPendingChangesFirst(t *testing.T) {
	b, w := started(t, PublisherConfig{})
	commitGuilds(t, w, 3)
	b.take("")
	w.guilds.Set(9, guildN(9)) // pending: version 3 has not seen it
	sendReport(b, w.pub, held{version: -1}, held{version: -1})
	// The pending change is closed into delta 4 and published to all ...
	live := decodedSync(t, b.take(".data"), w.pub.schema, 2)
	if len(live) != 1 || live[0].first != 4 || len(live[0].deltas) != 1 || live[0].withFull {
		t.Fatalf("live messages %+v, want delta 4", live)
	}
	// ... and the snapshot is of version 4, with guild 9 in it.
	got := answers(t, b, w)
	wantSync(t, got, true, 4, 5, 0)
	if w.guilds.Version() != 4 {
		t.Fatalf("version %d", w.guilds.Version())
	}
	// Without pending changes the snapshot is of the current version.
	w2b, w2 := started(t, PublisherConfig{})
	commitGuilds(t, w2, 3)
	w2b.take("")
	sendReport(w2b, w2.pub, held{version: -1}, held{version: -1})
	if live := w2b.take(".data"); len(live) != 0 {
		t.Fatalf("%d live messages without pending changes", len(live))
	}
	wantSync(t, answers(t, w2b, w2), true, 3, 4, 0)
}

func TestEmptySubscriberNoSnapshotYet(t *testing.T) {
	b, w := started(t, PublisherConfig{})
	commitGuilds(t, w, 2)
	b.take("")
	sendReport(b, w.pub, held{version: -1}, held{version: -1})
	wantSync(t, answers(t, b, w), true, 2, 3, 0)
	if st := w.pub.Stats(); st.Fulls != 2 { // guilds and teams
		t.Fatalf("%d snapshots generated", st.Fulls)
	}
}

func TestEmptySubscriberSnapshotOutrunByRing(t *testing.T) {
	b, w := started(t, PublisherConfig{Ring: 4})
	commitGuilds(t, w, 2)
	sendReport(b, w.pub, held{version: -1}, held{version: -1}) // snapshot at 2
	commitGuilds(t, w, 8)                                      // ring holds 7..10: delta 3 is gone
	b.take("")
	sendReport(b, w.pub, held{version: -1}, held{version: -1})
	wantSync(t, answers(t, b, w), true, 10, 11, 0)
}

func TestEmptySubscriberSnapshotChainsOntoRing(t *testing.T) {
	b, w := started(t, PublisherConfig{Ring: 5})
	commitGuilds(t, w, 8)
	sendReport(b, w.pub, held{version: -1}, held{version: -1}) // snapshot at 8
	commitGuilds(t, w, 2)                                      // ring holds 6..10
	b.take("")
	sendReport(b, w.pub, held{version: -1}, held{version: -1})
	// The seed's example: the snapshot of 8 and the deltas 9-10.
	wantSync(t, answers(t, b, w), true, 8, 9, 2)
	if st := w.pub.Stats(); st.Fulls != 2 {
		t.Fatalf("%d snapshots generated, want the two of the first report", st.Fulls)
	}
}

func TestSubscriberOlderThanRing(t *testing.T) {
	b, w := started(t, PublisherConfig{Ring: 3})
	commitGuilds(t, w, 10) // ring holds 8..10
	b.take("")
	e := w.pub.Epoch()
	// The seed's example: version 6 reported, oldest delta 8: delta 7 is
	// missing, so a snapshot.
	sendReport(b, w.pub, held{e, 6}, held{e, 0})
	wantSync(t, answers(t, b, w), true, 10, 11, 0)
}

func TestSubscriberInsideRing(t *testing.T) {
	b, w := started(t, PublisherConfig{Ring: 5})
	commitGuilds(t, w, 10) // ring holds 6..10
	b.take("")
	e := w.pub.Epoch()
	sendReport(b, w.pub, held{e, 8}, held{e, 0})
	wantSync(t, answers(t, b, w), false, 0, 9, 2)
	// The edge: one below the oldest delta still chains.
	sendReport(b, w.pub, held{e, 5}, held{e, 0})
	wantSync(t, answers(t, b, w), false, 0, 6, 5)
	if st := w.pub.Stats(); st.Fulls != 0 {
		t.Fatalf("%d snapshots generated", st.Fulls)
	}
}

func TestSubscriberUpToDate(t *testing.T) {
	b, w := started(t, PublisherConfig{})
	commitGuilds(t, w, 3)
	b.take("")
	e := w.pub.Epoch()
	sendReport(b, w.pub, held{e, 3}, held{e, 0})
	if got := b.take(""); len(got) != 0 {
		t.Fatalf("%d messages to an up-to-date subscriber", len(got))
	}
}

func TestSubscriberAheadIsImpossible(t *testing.T) {
	b, w := started(t, PublisherConfig{})
	commitGuilds(t, w, 3)
	b.take("")
	e := w.pub.Epoch()
	sendReport(b, w.pub, held{e, 7}, held{e, 0})
	got := answers(t, b, w)
	wantSync(t, got, true, 3, 4, 0)
	if !got[0].reset {
		t.Fatal("snapshot for an impossible version is not marked reset")
	}
	if st := w.pub.Stats(); st.Impossible != 1 || st.Dropped != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSubscriberOfAnotherHistory(t *testing.T) {
	b, w := started(t, PublisherConfig{})
	commitGuilds(t, w, 3)
	b.take("")
	sendReport(b, w.pub, held{w.pub.Epoch() + 1, 2}, held{w.pub.Epoch(), 0})
	wantSync(t, answers(t, b, w), true, 3, 4, 0)
}

// subscriberSide returns a subscriber that has loaded the publisher's
// snapshot of version v.
func subscriberSide(t *testing.T, v int) (*tapBus, *world, *game) {
	b, w := started(t, PublisherConfig{Ring: 16})
	commitGuilds(t, w, v)
	g := newGame(t, b, SubscriberConfig{})
	b.take("")
	g.start(t, t0)
	b.flush()
	if g.guilds.Version() != int64(v) {
		t.Fatalf("subscriber at %d after the snapshot, want %d", g.guilds.Version(), v)
	}
	return b, w, g
}

func TestSubscriberLoadsNewerSnapshotAndDropsDeleted(t *testing.T) {
	b, w, g := subscriberSide(t, 3)
	w.guilds.Delete(0)
	w.guilds.Delete(1)
	w.pub.Commit()
	b.take("") // the delta is lost
	sendReport(b, w.pub, held{version: -1}, held{version: -1})
	b.flush() // a snapshot of 4 the subscriber did not ask for
	if g.guilds.Version() != 4 || !sameCollection(w.guilds, g.guilds) {
		t.Fatalf("version %d, %d guilds, publisher %d", g.guilds.Version(), g.guilds.Len(), w.guilds.Len())
	}
	if _, ok := g.guilds.Get(0); ok {
		t.Fatal("guild 0 was disbanded but is still in the copy")
	}
	// A snapshot not newer than the copy is ignored.
	st := g.sub.Stats()
	sendReport(b, w.pub, held{version: -1}, held{version: -1})
	b.flush()
	if got := g.sub.Stats(); got.FullLoads != st.FullLoads || got.Stale == st.Stale {
		t.Fatalf("stale snapshot: before %+v after %+v", st, got)
	}
}

func TestSubscriberEmptyIgnoresDeltasAndReports(t *testing.T) {
	b, w := started(t, PublisherConfig{})
	g := newGame(t, b, SubscriberConfig{})
	g.start(t, t0)
	b.take(".report") // the start report is lost
	commitGuilds(t, w, 1)
	g.sub.Tick(t0.Add(2 * DefaultReportTimeout)) // the retry is due
	reports := len(b.take(".report"))
	for _, m := range b.take(".data") {
		b.deliver(m)
	}
	if g.guilds.Version() != -1 || g.guilds.Len() != 0 {
		t.Fatalf("empty subscriber applied a delta: version %d", g.guilds.Version())
	}
	rp := b.take(".report")
	if reports != 1 || len(rp) != 0 {
		// The retry went out at the tick; the delta must not add another
		// within the timeout.
		t.Fatalf("%d reports at the tick, %d after the delta", reports, len(rp))
	}
	g.sub.Tick(t0.Add(5 * DefaultReportTimeout))
	rp = b.take(".report")
	if len(rp) != 1 {
		t.Fatalf("%d reports after the timeout", len(rp))
	}
	f, _, _ := codec.ReadFrame(rp[0].data)
	got, err := decodeReport(f.Payload, g.sub.schema, 2)
	if err != nil || got.held[0].version != -1 {
		t.Fatalf("report %+v, %v: want version -1", got, err)
	}
}

func TestSubscriberIgnoresDuplicateDelta(t *testing.T) {
	b, w, g := subscriberSide(t, 3)
	commitGuilds(t, w, 1)
	live := b.take(".data")
	for _, m := range live {
		b.deliver(m)
	}
	for _, m := range live { // the bus duplicated it
		b.deliver(m)
	}
	if g.guilds.Version() != 4 || !sameCollection(w.guilds, g.guilds) {
		t.Fatalf("version %d", g.guilds.Version())
	}
	if st := g.sub.Stats(); st.Stale == 0 || st.Resets != 0 {
		t.Fatalf("stats %+v", st)
	}
	if rp := b.take(".report"); len(rp) != 0 {
		t.Fatalf("%d reports for a duplicate", len(rp))
	}
}

func TestSubscriberDropsCopyOfAnotherHistory(t *testing.T) {
	b, _, g := subscriberSide(t, 3)
	// A publisher that lost its file starts a new history at version 0;
	// its first delta is at or below the subscriber's version.
	w2 := newWorld(t, b, PublisherConfig{})
	w2.start(t, t0)
	b.take("")
	g.sub.Tick(t0.Add(DefaultReportTimeout))
	commitGuilds(t, w2, 1)
	for _, m := range b.take(".data") {
		b.deliver(m)
	}
	if g.guilds.Version() != -1 {
		t.Fatalf("version %d after a delta of another history, want -1", g.guilds.Version())
	}
	rp := b.take(".report")
	if len(rp) != 1 {
		t.Fatalf("%d reports", len(rp))
	}
	b.deliver(rp[0])
	b.flush()
	if g.guilds.Version() != 1 || !sameCollection(w2.guilds, g.guilds) {
		t.Fatalf("version %d after the snapshot of the new history", g.guilds.Version())
	}
}

func TestSubscriberReportsGap(t *testing.T) {
	b, w, g := subscriberSide(t, 3)
	commitGuilds(t, w, 2)
	live := b.take(".data")
	g.sub.Tick(t0.Add(DefaultReportTimeout)) // the start report is old enough
	b.deliver(live[1])                       // delta 5 before delta 4
	if g.guilds.Version() != 3 {
		t.Fatalf("version %d", g.guilds.Version())
	}
	rp := b.take(".report")
	if len(rp) != 1 {
		t.Fatalf("%d reports for a gap", len(rp))
	}
	f, _, _ := codec.ReadFrame(rp[0].data)
	got, _ := decodeReport(f.Payload, g.sub.schema, 2)
	if got.held[0].version != 3 {
		t.Fatalf("reported %d, want the local version 3", got.held[0].version)
	}
	b.deliver(rp[0])
	b.flush()
	if g.guilds.Version() != 5 || !sameCollection(w.guilds, g.guilds) {
		t.Fatalf("version %d after the answer", g.guilds.Version())
	}
}

func TestSubscriberAppliesNextDelta(t *testing.T) {
	b, w, g := subscriberSide(t, 3)
	w.guilds.Set(1, guild{Name: "changed", Level: 99, Members: 1})
	w.guilds.Set(40, guildN(40))
	w.guilds.Delete(2)
	w.pub.Commit()
	b.flush()
	if g.guilds.Version() != 4 || !sameCollection(w.guilds, g.guilds) {
		t.Fatalf("version %d", g.guilds.Version())
	}
	if st := g.sub.Stats(); st.Deltas != 1 || st.FullLoads != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestReportTimeoutAndBoundedRetry(t *testing.T) {
	b := newTapBus()
	g := newGame(t, b, SubscriberConfig{ReportTimeout: time.Second, MaxReportInterval: 4 * time.Second})
	g.start(t, t0)
	// No publisher answers: reports go out at 0, then after 1, 2, 4, 4 ...
	// seconds, never more often than the timeout and never further apart
	// than the bound.
	var at []time.Duration
	for ms := 0; ms <= 20_000; ms += 100 {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		g.sub.Tick(now)
		if n := len(b.take(".report")); n > 0 {
			at = append(at, now.Sub(t0))
		}
	}
	want := []time.Duration{0, 1, 3, 7, 11, 15, 19}
	if len(at) != len(want) {
		t.Fatalf("reports at %v", at)
	}
	for i := range want {
		if at[i] != want[i]*time.Second {
			t.Fatalf("reports at %v, want %v s", at, want)
		}
	}
}
