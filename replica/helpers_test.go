package replica

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/replica/replicatest"
)

type guild = replicatest.Guild
type team = replicatest.Team

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var t0 = time.Unix(1_700_000_000, 0)

// tapBus records what is published and delivers only what a test hands
// over, from the test's goroutine: the test decides order, loss and
// duplication.
type tapBus struct {
	mu    sync.Mutex
	subs  map[string][]*tapSub
	queue []tapMsg
}

type tapSub struct {
	fn   func([]byte)
	gone bool
}

type tapMsg struct {
	subject string
	data    []byte
}

func newTapBus() *tapBus { return &tapBus{subs: map[string][]*tapSub{}} }

func (b *tapBus) Publish(subject string, msg []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, tapMsg{subject, append([]byte(nil), msg...)})
	return nil
}

func (b *tapBus) Subscribe(subject string, fn func([]byte)) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &tapSub{fn: fn}
	b.subs[subject] = append(b.subs[subject], s)
	return func() { b.mu.Lock(); s.gone = true; b.mu.Unlock() }, nil
}

// take removes and returns the queued messages whose subject ends with
// suffix.
func (b *tapBus) take(suffix string) []tapMsg {
	b.mu.Lock()
	defer b.mu.Unlock()
	var got, rest []tapMsg
	for _, m := range b.queue {
		if strings.HasSuffix(m.subject, suffix) {
			got = append(got, m)
		} else {
			rest = append(rest, m)
		}
	}
	b.queue = rest
	return got
}

// deliver hands m to the live subscribers of its subject.
func (b *tapBus) deliver(m tapMsg) {
	b.mu.Lock()
	var fns []func([]byte)
	for _, s := range b.subs[m.subject] {
		if !s.gone {
			fns = append(fns, s.fn)
		}
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(m.data)
	}
}

// flush delivers everything queued, and what that publishes, in order.
func (b *tapBus) flush() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.mu.Unlock()
			return
		}
		m := b.queue[0]
		b.queue = b.queue[1:]
		b.mu.Unlock()
		b.deliver(m)
	}
}

// step delivers one queued message chosen at random, dropping or
// duplicating it with the given odds. It reports whether anything was
// queued.
func (b *tapBus) step(rng *rand.Rand, loss, dup float64) bool {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.mu.Unlock()
		return false
	}
	i := rng.IntN(len(b.queue))
	m := b.queue[i]
	b.queue = append(b.queue[:i], b.queue[i+1:]...)
	if rng.Float64() < dup {
		b.queue = append(b.queue, m)
	}
	b.mu.Unlock()
	if rng.Float64() >= loss {
		b.deliver(m)
	}
	return true
}

// decodedSync decodes the sync messages among msgs (unsplit ones).
func decodedSync(t *testing.T, msgs []tapMsg, schema uint32, n int) []*syncMsg {
	t.Helper()
	var out []*syncMsg
	r := codec.NewReassembler(codec.ReassemblerConfig{})
	for _, m := range msgs {
		f, _, err := codec.ReadFrame(m.data)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := r.Add(t0, f)
		if err != nil {
			t.Fatal(err)
		}
		if payload == nil || f.Type != typeSync {
			continue
		}
		sm, err := decodeSync(payload, schema, n, DefaultMaxPayload)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sm)
	}
	return out
}

// world is a publisher with guilds and teams on a tap bus.
type world struct {
	pub    *Publisher
	guilds *Source[guild, *guild]
	teams  *Source[team, *team]
}

func newWorld(t testing.TB, bus Bus, cfg PublisherConfig) *world {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "world"
	}
	cfg.Logger = quiet
	p, err := NewPublisher(bus, cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewSource[guild](p, "guilds")
	if err != nil {
		t.Fatal(err)
	}
	tm, err := NewSource[team](p, "teams")
	if err != nil {
		t.Fatal(err)
	}
	return &world{pub: p, guilds: g, teams: tm}
}

func (w *world) start(t testing.TB, now time.Time) {
	t.Helper()
	if err := w.pub.Start(now); err != nil {
		t.Fatal(err)
	}
}

// game is a subscriber with guilds and teams.
type game struct {
	sub    *Subscriber
	guilds *Mirror[guild, *guild]
	teams  *Mirror[team, *team]
}

func newGame(t testing.TB, bus Bus, cfg SubscriberConfig) *game {
	t.Helper()
	if cfg.Publisher == "" {
		cfg.Publisher = "world"
	}
	if cfg.ID == "" {
		cfg.ID = "game-1"
	}
	cfg.Logger = quiet
	s, err := NewSubscriber(bus, cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewMirror[guild](s, "guilds")
	if err != nil {
		t.Fatal(err)
	}
	tm, err := NewMirror[team](s, "teams")
	if err != nil {
		t.Fatal(err)
	}
	return &game{sub: s, guilds: g, teams: tm}
}

func (g *game) start(t testing.TB, now time.Time) {
	t.Helper()
	if err := g.sub.Start(now); err != nil {
		t.Fatal(err)
	}
}

func guildN(i int) guild {
	return guild{Name: "g" + string(rune('a'+i%26)), Level: uint8(i % 100), Members: uint16(i % 500), Funds: uint32(i * 7), Leader: uint64(i)}
}

// sameCollection compares a source and a mirror record by record.
func sameCollection[T comparable, P codec.Record[T]](src *Source[T, P], m *Mirror[T, P]) bool {
	if src.Len() != m.Len() {
		return false
	}
	ok := true
	src.Range(func(id uint64, v T) bool {
		got, found := m.Get(id)
		ok = found && got == v
		return ok
	})
	return ok
}
