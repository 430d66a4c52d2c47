package seal

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

var (
	secret = []byte("the cluster's secret, 32 bytes!!")
	other  = []byte("another cluster's secret, 32 b..")
)

func mustKeys(t testing.TB, s []byte, accept ...[]byte) *Keys {
	t.Helper()
	k, err := NewKeys(s, accept...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustSender(t testing.TB, k *Keys, r Role, id string) *Sender {
	t.Helper()
	s, err := k.NewSender(r, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpen: what a sender seals opens, with its name, for the subject it
// was sealed for; every kind of tampering, a replay, a stale message and
// another cluster's are refused with the error that says so.
func TestOpen(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := mustKeys(t, secret)
	s := mustSender(t, k, RoleNode, "eu-1")
	msg := s.Seal("tongbu.cluster.ev.hb", []byte(`{"id":"eu-1"}`), now)

	o := NewOpener(k, time.Minute)
	from, data, err := o.Open(nil, "tongbu.cluster.ev.hb", msg, now)
	if err != nil || string(data) != `{"id":"eu-1"}` || from != s.Peer() {
		t.Fatalf("open: %v %q from %v", err, data, from)
	}
	if bytes.Contains(msg, []byte(`"id"`)) {
		t.Error("the payload travels in the clear")
	}

	flip := func(i int) []byte {
		b := bytes.Clone(msg)
		b[i] ^= 1
		return b
	}
	for _, tc := range []struct {
		name    string
		subject string
		msg     []byte
		at      time.Time
		want    error
	}{
		{"replayed", "tongbu.cluster.ev.hb", msg, now, ErrReplayed},
		{"another subject", "tongbu.cluster.ev.room", msg, now, ErrForged},
		{"the role altered", "tongbu.cluster.ev.hb", flip(5), now, ErrForged},
		{"the id altered", "tongbu.cluster.ev.hb", flip(9), now, ErrForged},
		{"the sequence altered", "tongbu.cluster.ev.hb", flip(preLen + 4 + 8), now, ErrForged},
		{"the time altered", "tongbu.cluster.ev.hb", flip(preLen + 4 + 16), now, ErrForged},
		{"the payload altered", "tongbu.cluster.ev.hb", flip(len(msg) - tagLen - 2), now, ErrForged},
		{"the tag altered", "tongbu.cluster.ev.hb", flip(len(msg) - 1), now, ErrForged},
		{"truncated", "tongbu.cluster.ev.hb", msg[:len(msg)-1], now, ErrForged},
		{"too short", "tongbu.cluster.ev.hb", msg[:preLen+2], now, ErrForged},
		{"empty", "tongbu.cluster.ev.hb", nil, now, ErrForged},
		{"plain JSON", "tongbu.cluster.ev.hb", []byte(`{"id":"eu-1","instance":1}`), now, ErrForged},
		{"another cluster's", "tongbu.cluster.ev.hb", mustSender(t, mustKeys(t, other), RoleNode, "eu-1").Seal("tongbu.cluster.ev.hb", nil, now), now, ErrForged},
		{"stale", "tongbu.cluster.ev.hb", s.Seal("tongbu.cluster.ev.hb", nil, now.Add(-2*time.Minute)), now, ErrStale},
		{"from the future", "tongbu.cluster.ev.hb", s.Seal("tongbu.cluster.ev.hb", nil, now.Add(2*time.Minute)), now, ErrStale},
		{"a reply published on a subject", "tongbu.cluster.ev.hb", s.SealReply("tongbu.cluster.ev.hb", msg, nil, now), now, ErrForged},
	} {
		_, _, err := o.Open(nil, tc.subject, tc.msg, tc.at)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Nothing refused took a place: the next real message opens.
	if _, _, err := o.Open(nil, "tongbu.cluster.ev.hb", s.Seal("tongbu.cluster.ev.hb", nil, now), now); err != nil {
		t.Errorf("the next message: %v", err)
	}
}

// TestReplayWindow: messages of one sender open once each, in the order
// they were sealed (NATS keeps a publisher's order on a subscription);
// one older than the newest taken is refused, whether it was taken or
// missed; each sender instance has a window of its own, and a restarted
// process (a new instance) starts afresh.
func TestReplayWindow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := mustKeys(t, secret)
	a, b := mustSender(t, k, RoleNode, "a"), mustSender(t, k, RoleNode, "a")
	var msgs [][]byte
	for range 10 {
		msgs = append(msgs, a.Seal("s", nil, now))
	}
	o := NewOpener(k, 0)
	for _, i := range []int{0, 1, 3, 9} { // 2 and 4..8 were missed (lost, or sent to others)
		if _, _, err := o.Open(nil, "s", msgs[i], now); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	for _, i := range []int{9, 0, 2, 8} {
		if _, _, err := o.Open(nil, "s", msgs[i], now); !errors.Is(err, ErrReplayed) {
			t.Errorf("message %d again, or late: %v", i, err)
		}
	}
	if _, _, err := o.Open(nil, "s", b.Seal("s", nil, now), now); err != nil {
		t.Errorf("another instance of the same id: %v", err)
	}
	if o.Senders() != 2 {
		t.Errorf("%d senders remembered, want 2", o.Senders())
	}
}

// TestRoles: a sender's role and id are part of its key: what one seals
// names it, whatever its payload says, and no id or role can be claimed
// by editing the clear header.
func TestRoles(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := mustKeys(t, secret)
	q := mustSender(t, k, RoleQueue, "q1")
	msg := q.Seal("tongbu.mm.hb", []byte(`{"id":"mm-1"}`), now)
	from, _, err := NewOpener(k, 0).Open(nil, "tongbu.mm.hb", msg, now)
	if err != nil || from.Role != RoleQueue || from.ID != "q1" {
		t.Fatalf("%v from %v", err, from)
	}
	forged := bytes.Clone(msg)
	forged[preLen-3] = byte(RoleService) // claim to be a Service
	if _, _, err := NewOpener(k, 0).Open(nil, "tongbu.mm.hb", forged, now); !errors.Is(err, ErrForged) {
		t.Errorf("a queue's message relabelled as a Service's: %v", err)
	}
	for _, r := range []Role{0, maxRole + 1} {
		if _, err := k.NewSender(r, "x"); err == nil {
			t.Errorf("a sender of role %d", r)
		}
	}
	for _, id := range []string{"", string(make([]byte, MaxIDLen+1))} {
		if _, err := k.NewSender(RoleNode, id); err == nil {
			t.Errorf("a sender of id %q", id)
		}
	}
}

// TestReplyBinding: a reply opens only as the answer to the request it
// was sealed for.
func TestReplyBinding(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := mustKeys(t, secret)
	lobby, node := mustSender(t, k, RoleClient, "lobby"), mustSender(t, k, RoleNode, "eu-1")
	req1 := lobby.Seal("tongbu.cluster.create", []byte("room a"), now)
	req2 := lobby.Seal("tongbu.cluster.create", []byte("room b"), now)
	rep := node.SealReply("_INBOX.x.1", req1, []byte("placed a"), now)
	o := NewOpener(k, 0)
	if _, data, err := o.OpenReply(nil, "_INBOX.x.1", TagOf(req1), rep, now); err != nil || string(data) != "placed a" {
		t.Fatalf("the reply: %v %q", err, data)
	}
	if _, _, err := o.OpenReply(nil, "_INBOX.x.1", TagOf(req2), rep, now); !errors.Is(err, ErrForged) {
		t.Errorf("the reply to another request: %v", err)
	}
	if _, _, err := o.OpenReply(nil, "_INBOX.x.2", TagOf(req1), rep, now); !errors.Is(err, ErrForged) {
		t.Errorf("the reply on another subject: %v", err)
	}
	if _, _, err := o.OpenReply(nil, "_INBOX.x.1", TagOf(req1), node.Seal("_INBOX.x.1", nil, now), now); !errors.Is(err, ErrForged) {
		t.Errorf("a message that is no reply: %v", err)
	}
}

// TestRotation: during a rotation every process opens both secrets'
// messages; one that dropped the old secret refuses the old one's.
func TestRotation(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old, next := mustKeys(t, secret, other), mustKeys(t, other, secret)
	a, b := mustSender(t, old, RoleNode, "a"), mustSender(t, next, RoleNode, "b")
	for _, k := range []*Keys{old, next} {
		o := NewOpener(k, 0)
		for _, s := range []*Sender{a, b} {
			if _, _, err := o.Open(nil, "s", s.Seal("s", nil, now), now); err != nil {
				t.Errorf("keys %s, sender %v: %v", k.ID(), s.Peer(), err)
			}
		}
	}
	done := mustKeys(t, other)
	if _, _, err := NewOpener(done, 0).Open(nil, "s", a.Seal("s", nil, now), now); !errors.Is(err, ErrForged) {
		t.Errorf("the old secret's message after the rotation: %v", err)
	}
	if _, err := NewKeys([]byte("short")); err == nil {
		t.Error("a 5-byte secret")
	}
	if old.ID() == next.ID() {
		t.Error("two secrets with one id")
	}
}

// FuzzOpen feeds an Opener what any NATS client could publish: it never
// panics, and nothing but what the cluster's secret sealed opens.
func FuzzOpen(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	k := mustKeys(f, secret)
	s := mustSender(f, k, RoleNode, "eu-1")
	req := s.Seal("subj", []byte("hello"), now)
	f.Add(req)
	f.Add(s.SealReply("subj", req, []byte("hi"), now))
	f.Add([]byte(`{"id":"eu-1"}`))
	f.Add([]byte{version, 0, 0, 0, 0, 1, 0, 1, 'x'})
	o := NewOpener(k, time.Minute)
	f.Fuzz(func(t *testing.T, b []byte) {
		from, data, err := o.Open(nil, "subj", b, now)
		if err == nil && (from != s.Peer() || !bytes.Equal(data, []byte("hello"))) {
			t.Fatalf("opened %q from %v", data, from)
		}
		o.OpenReply(nil, "subj", TagOf(req), b, now)
		Claimed(b)
	})
}

// BenchmarkSealOpen seals and opens a heartbeat-sized message (300
// bytes), the cost sealing adds to each of the cluster's messages; the
// floor beside it is a plain copy of the same bytes.
func BenchmarkSealOpen(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	k := mustKeys(b, secret)
	s := mustSender(b, k, RoleNode, "eu-1")
	o := NewOpener(k, time.Hour)
	payload := bytes.Repeat([]byte("x"), 300)
	b.Run("seal+open", func(b *testing.B) {
		var dst []byte
		for range b.N {
			s.mu.Lock()
			msg := s.seal("tongbu.cluster.ev.hb", nil, payload, now)
			s.mu.Unlock()
			var err error
			if _, dst, err = o.Open(dst[:0], "tongbu.cluster.ev.hb", msg, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		var dst []byte
		for range b.N {
			dst = append(dst[:0], payload...)
		}
		_ = dst
	})
}
