package replica

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tongbu/tongbu/codec"
)

// seedMessages returns real messages of every kind: heads, live deltas,
// snapshots split into parts, and reports.
func seedMessages(t testing.TB) (pub *Publisher, msgs [][]byte) {
	b := newTapBus()
	w := newWorld(t, b, PublisherConfig{MaxMessage: 200, Ring: 4})
	w.start(t, t0)
	for i := range 30 {
		w.guilds.Set(uint64(i), guildN(i))
		w.teams.Set(uint64(i), team{Leader: uint64(i), Size: 3})
	}
	w.pub.Commit()
	w.guilds.Delete(3)
	w.guilds.Set(4, guildN(99))
	w.pub.Commit()
	g := newGame(t, b, SubscriberConfig{})
	g.start(t, t0)
	for _, m := range b.take("") {
		msgs = append(msgs, m.data)
		b.deliver(m)
	}
	b.flush()
	for _, m := range b.take("") {
		msgs = append(msgs, m.data)
	}
	return w.pub, msgs
}

// FuzzSubscriberMessage feeds the subscriber whole bus messages: frames,
// parts, heads and sync messages. It must never panic, and what it holds
// must stay within its caps.
func FuzzSubscriberMessage(f *testing.F) {
	_, msgs := seedMessages(f)
	for _, m := range msgs {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		g := newGame(t, newTapBus(), SubscriberConfig{MaxPayload: 1 << 16, MaxRecords: 64})
		g.start(t, t0)
		g.sub.onMessage(msg)
		g.sub.onMessage(msg)
		if g.guilds.Len() > 64 || g.teams.Len() > 64 || g.sub.reasm.Stats().HeldBytes > 1<<16 {
			t.Fatalf("caps exceeded: %d guilds, %d teams, %d bytes held", g.guilds.Len(), g.teams.Len(), g.sub.reasm.Stats().HeldBytes)
		}
	})
}

// unsealed strips the checksum, so that a fuzz target can seal what the
// fuzzer makes and reach the decoder behind the checksum.
func unsealed(payload []byte) []byte { return payload[:max(0, len(payload)-crcLen)] }

// FuzzDecodeSync decodes sync payloads (sealed by the target) and applies
// their bodies.
func FuzzDecodeSync(f *testing.F) {
	pub, msgs := seedMessages(f)
	for _, m := range msgs {
		if fr, _, err := codec.ReadFrame(m); err == nil && !fr.Split && fr.Type == typeSync {
			f.Add(unsealed(fr.Payload))
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := decodeSync(sealMessage(payload), pub.schema, 2, 1<<16)
		if err != nil {
			return
		}
		var rm recordMap[guild, *guild]
		rm.recs = map[uint64]*guild{}
		if m.withFull {
			rm.loadFull(codec.NewReader(m.full), 64)
		}
		for _, d := range m.deltas {
			rm.applyDelta(codec.NewReader(d), 64)
		}
		if len(rm.recs) > 64 {
			t.Fatalf("%d records over the cap", len(rm.recs))
		}
	})
}

// FuzzDecodeReportPayload decodes report payloads (sealed by the target).
func FuzzDecodeReportPayload(f *testing.F) {
	f.Add(unsealed(encodeReport(nil, report{schema: 7, id: "game-1", held: []held{{1, 5}, {1, -1}}})))
	f.Fuzz(func(t *testing.T, payload []byte) {
		rp, err := decodeReport(sealMessage(payload), 7, 2)
		if err == nil && (len(rp.held) != 2 || rp.held[0].version < -1 || rp.held[1].version < -1) {
			t.Fatalf("report %+v", rp)
		}
	})
}

// FuzzRecordBodies loads full bodies and applies delta bodies to a copy.
func FuzzRecordBodies(f *testing.F) {
	var src Source[guild, *guild]
	src.m.recs, src.pending = map[uint64]*guild{}, map[uint64]*guild{}
	for i := range 5 {
		src.pending[uint64(i*3)] = &guild{Name: "x", Level: uint8(i)}
	}
	var w codec.Writer
	src.closeDelta(&w)
	f.Add(append([]byte(nil), w.Bytes()...))
	src.pending[3] = nil
	src.pending[6] = &guild{Name: "y", Members: 9}
	w = codec.Writer{}
	src.closeDelta(&w)
	f.Add(append([]byte(nil), w.Bytes()...))
	w = codec.Writer{}
	src.encodeFull(&w)
	f.Add(append([]byte(nil), w.Bytes()...))
	f.Fuzz(func(t *testing.T, body []byte) {
		var m recordMap[guild, *guild]
		m.recs = map[uint64]*guild{0: {Name: "a"}, 3: {Name: "b"}, 6: {}}
		before := len(m.recs)
		if err := m.applyDelta(codec.NewReader(body), 8); err != nil && len(m.recs) != before {
			t.Fatalf("a failed delta changed the copy: %d records, had %d", len(m.recs), before)
		}
		if len(m.recs) > 8 {
			t.Fatalf("%d records over the cap", len(m.recs))
		}
		if err := m.loadFull(codec.NewReader(body), 8); err == nil && len(m.recs) > 8 {
			t.Fatalf("%d records over the cap", len(m.recs))
		}
	})
}

// FuzzDecodeReport feeds the publisher whole report messages.
func FuzzDecodeReport(f *testing.F) {
	_, msgs := seedMessages(f)
	for _, m := range msgs {
		if fr, _, err := codec.ReadFrame(m); err == nil && fr.Type == typeReport {
			f.Add(m)
		}
	}
	f.Add(codec.AppendFrame(nil, typeReport, encodeReport(nil, report{id: "x", held: []held{{1, 5}, {1, -1}}})))
	f.Fuzz(func(t *testing.T, msg []byte) {
		b := newTapBus()
		w := newWorld(t, b, PublisherConfig{})
		w.start(t, t0)
		w.pub.onReport(msg)
	})
}

// FuzzDecodeHeads decodes heartbeat payloads (sealed by the target).
func FuzzDecodeHeads(f *testing.F) {
	f.Add(unsealed(encodeHeads(nil, heads{schema: 7, epoch: 9, versions: []uint64{1, 2}})))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		h, err := decodeHeads(sealMessage(payload), 7, 2)
		if err == nil && len(h.versions) != 2 {
			t.Fatalf("%d versions", len(h.versions))
		}
	})
}

// FuzzLoadFile loads file bodies as a publisher's and a subscriber's, and
// raw bytes as a whole file, in memory (a fuzzer that wrote files would
// spend its time on the disk): either they load within the record cap or
// they are refused as a bad file, and nothing panics. The tests in
// file_test.go (TestUnusableFilesStartFresh and others) cover the
// path through the disk.
func FuzzLoadFile(f *testing.F) {
	dir := f.TempDir()
	b := newTapBus()
	w := newWorld(f, b, PublisherConfig{Path: filepath.Join(dir, "p")})
	w.start(f, t0)
	for i := range 10 {
		w.guilds.Set(uint64(i), guildN(i))
	}
	w.pub.Commit()
	g := newGame(f, b, SubscriberConfig{Path: filepath.Join(dir, "s")})
	g.start(f, t0)
	b.flush()
	if err := g.sub.Save(); err != nil {
		f.Fatal(err)
	}
	for _, k := range []struct {
		name string
		kind byte
	}{{"p", kindPub}, {"s", kindSub}} {
		data, err := os.ReadFile(filepath.Join(dir, k.name))
		if err != nil {
			f.Fatal(err)
		}
		body, err := openFile(data, k.kind)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	// In memory: the publisher and the subscriber load the body as their
	// file's, and the bytes are opened as a whole file.
	w = newWorld(f, newTapBus(), PublisherConfig{MaxRecords: 64})
	g = newGame(f, newTapBus(), SubscriberConfig{MaxRecords: 64})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, err := range []error{w.pub.loadBody(body), g.sub.loadBody(body)} {
			if err != nil && !errors.Is(err, ErrBadFile) && !errors.Is(err, ErrSchema) {
				t.Fatalf("error %v is neither ErrBadFile nor ErrSchema", err)
			}
		}
		if w.guilds.Len() > 64 || g.guilds.Len() > 64 {
			t.Fatal("records over the cap")
		}
		if _, err := openFile(body, kindSub); err != nil && !errors.Is(err, ErrBadFile) {
			t.Fatalf("error %v is not ErrBadFile", err)
		}
	})
}
