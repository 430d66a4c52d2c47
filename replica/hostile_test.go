package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

func TestHostileSyncMessages(t *testing.T) {
	b := newTapBus()
	g := newGame(t, b, SubscriberConfig{MaxPayload: 1 << 16})
	g.start(t, t0)
	schema := g.sub.schema
	seal := func(m *syncMsg) []byte { out, _ := encodeSync(nil, m, nil); return out }
	var full codec.Writer
	(&recordMap[guild, *guild]{recs: map[uint64]*guild{1: {Name: "a"}}}).encodeFull(&full)
	bomb := codec.Compress(nil, make([]byte, 1<<20)) // a megabyte of zeros in a few kilobytes
	tests := []struct {
		name    string
		payload []byte
		want    error
	}{
		{"unknown collection", seal(&syncMsg{schema: schema, epoch: 1, collection: 7, withFull: true, full: full.Bytes()}), ErrUnknownCollection},
		{"other schema", seal(&syncMsg{schema: schema + 1, epoch: 1, withFull: true, full: full.Bytes()}), ErrSchema},
		{"delta version 0", seal(&syncMsg{schema: schema, epoch: 1, first: 0, deltas: [][]byte{{0}}}), ErrImpossibleVersion},
		{"version beyond 2^63", seal(&syncMsg{schema: schema, epoch: 1, first: maxVersion + 1, deltas: [][]byte{{0}}}), ErrImpossibleVersion},
		{"deltas running past 2^63", seal(&syncMsg{schema: schema, epoch: 1, first: maxVersion, deltas: [][]byte{{0}, {0}}}), ErrImpossibleVersion},
		{"empty", seal(&syncMsg{schema: schema, epoch: 1, first: 3}), ErrMalformed},
		{"bad checksum", append(seal(&syncMsg{schema: schema, epoch: 1, withFull: true, full: full.Bytes()})[:20], 1, 2, 3, 4), ErrMalformed},
		{"bomb", sealMessage(append(unsealed(seal(&syncMsg{schema: schema, epoch: 1, withFull: true, full: full.Bytes()}))[:14], bomb...)), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.sub.handle(codec.AppendFrame(nil, typeSync, tt.payload))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if g.guilds.Version() != -1 || g.guilds.Len() != 0 {
				t.Fatal("a hostile message changed the copy")
			}
		})
	}
}

func TestHostileReports(t *testing.T) {
	b := newTapBus()
	w := newWorld(t, b, PublisherConfig{})
	w.start(t, t0)
	b.take("")
	e := w.pub.Epoch()
	frame := func(rp report) []byte { return codec.AppendFrame(nil, typeReport, encodeReport(nil, rp)) }
	bad := encodeReport(nil, report{schema: w.pub.schema, id: "game-1", held: []held{{e, 0}, {e, 0}}})
	bad[len(bad)-1] ^= 1
	tests := []struct {
		name string
		msg  []byte
		want error
	}{
		{"other schema", frame(report{schema: 1, id: "game-1", held: []held{{e, 0}, {e, 0}}}), ErrSchema},
		{"too few collections", frame(report{schema: w.pub.schema, id: "game-1", held: []held{{e, 0}}}), ErrSchema},
		{"bad subscriber name", frame(report{schema: w.pub.schema, id: "a.b", held: []held{{e, 0}, {e, 0}}}), ErrMalformed},
		{"impossible version", frame(report{schema: w.pub.schema, id: "game-1", held: []held{{e, maxVersion}, {e, 0}}}), ErrImpossibleVersion},
		{"ahead of the publisher", frame(report{schema: w.pub.schema, id: "game-1", held: []held{{e, 5}, {e, 0}}}), ErrImpossibleVersion},
		{"bad checksum", codec.AppendFrame(nil, typeReport, bad), ErrMalformed},
		{"wrong frame type", codec.AppendFrame(nil, typeSync, nil), ErrMalformed},
		{"trailing bytes", append(frame(report{schema: w.pub.schema, id: "game-1", held: []held{{e, 0}, {e, 0}}}), 0), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := w.pub.handleReport(tt.msg); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	// The one answer among them went to the claimed subscriber: a reset
	// snapshot for the version ahead of the publisher.
	if got := b.take(""); len(got) != 1 { // guilds' snapshot; teams at 0 is up to date
		t.Fatalf("%d answers to hostile reports", len(got))
	}
}

// TestPartsThatNeverComplete floods a subscriber with first parts of split
// messages: what it holds stays under its cap, and the parts expire.
func TestPartsThatNeverComplete(t *testing.T) {
	b := newTapBus()
	const limit = 1 << 14
	g := newGame(t, b, SubscriberConfig{MaxPayload: limit, PartTimeout: time.Second})
	g.start(t, t0)
	s := codec.Splitter{Limit: 1000}
	payload := make([]byte, 5000)
	refused := 0
	for i := range 200 {
		payload[0] = byte(i)
		first := true
		s.Split(typeSync, payload, func(packet []byte) error {
			if first { // only the first part of each message arrives
				if err := g.sub.handle(packet); errors.Is(err, codec.ErrPeerBudget) {
					refused++
				}
				first = false
			}
			return nil
		})
		if held := g.sub.reasm.Stats().HeldBytes; held > limit {
			t.Fatalf("holding %d bytes, cap %d", held, limit)
		}
	}
	if refused == 0 {
		t.Fatal("no part was refused for the budget")
	}
	g.sub.Tick(t0.Add(2 * time.Second))
	if st := g.sub.reasm.Stats(); st.HeldMsgs != 0 || st.HeldBytes != 0 {
		t.Fatalf("after the timeout: %+v", st)
	}
}

func TestConfigErrors(t *testing.T) {
	b := newTapBus()
	if _, err := NewPublisher(b, PublisherConfig{Name: "a.b"}); !errors.Is(err, ErrConfig) {
		t.Errorf("dotted name: %v", err)
	}
	if _, err := NewPublisher(nil, PublisherConfig{Name: "w"}); !errors.Is(err, ErrConfig) {
		t.Errorf("nil bus: %v", err)
	}
	if _, err := NewSubscriber(b, SubscriberConfig{Publisher: "w"}); !errors.Is(err, ErrConfig) {
		t.Errorf("no ID: %v", err)
	}
	p, _ := NewPublisher(b, PublisherConfig{Name: "w", Logger: quiet})
	if err := p.Start(t0); !errors.Is(err, ErrConfig) {
		t.Errorf("start without collections: %v", err)
	}
	p, _ = NewPublisher(b, PublisherConfig{Name: "w", Logger: quiet})
	NewSource[guild](p, "guilds")
	if _, err := NewSource[team](p, "guilds"); !errors.Is(err, ErrConfig) {
		t.Errorf("twice: %v", err)
	}
	p.Start(t0)
	if _, err := NewSource[team](p, "teams"); !errors.Is(err, ErrConfig) {
		t.Errorf("after Start: %v", err)
	}
	src, _ := NewSource[guild](&Publisher{cfg: PublisherConfig{Ring: 1}}, "x")
	if err := src.Set(1, guild{Level: 101}); !errors.Is(err, codec.ErrOutOfRange) {
		t.Errorf("out-of-range record: %v", err)
	}
}
