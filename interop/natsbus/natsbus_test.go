//go:build !js

package natsbus_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/natsbus"
)

// bus is the interface replica runs over; *natsbus.Bus must
// satisfy it without importing that package.
type bus interface {
	Publish(subject string, msg []byte) error
	Subscribe(subject string, fn func(msg []byte)) (cancel func(), err error)
}

var _ bus = (*natsbus.Bus)(nil)

// recv waits for one message on ch; the bound only turns a hang into a
// failure.
func recv(t *testing.T, ch <-chan []byte) []byte {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message in 10 s")
		return nil
	}
}

func TestPublishSubscribe(t *testing.T) {
	s := natstest.Server(t)
	pub, err := natsbus.Dial(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	sub := natsbus.New(natstest.Conn(t, s))

	got1, got2 := make(chan []byte, 100), make(chan []byte, 100)
	cancel1, err := sub.Subscribe("replica.guilds", func(m []byte) { got1 <- bytes.Clone(m) })
	if err != nil {
		t.Fatal(err)
	}
	cancel2, err := sub.Subscribe("replica.*", func(m []byte) { got2 <- bytes.Clone(m) })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel2()

	// The publisher reuses its buffer at once: the bus must have copied it.
	buf := []byte("message 0")
	for i := range 10 {
		copy(buf, fmt.Sprintf("message %d", i))
		if err := pub.Publish("replica.guilds", buf); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		want := fmt.Sprintf("message %d", i)
		if m := recv(t, got1); string(m) != want {
			t.Fatalf("subscriber 1 got %q, want %q (order per publisher is kept)", m, want)
		}
		if m := recv(t, got2); string(m) != want {
			t.Fatalf("wildcard subscriber got %q, want %q", m, want)
		}
	}

	// After cancel, the first subscription receives nothing more; the
	// second still does, so a message published after the cancel arrives
	// there and proves the first had its chance.
	cancel1()
	cancel1() // twice is harmless
	if err := pub.Publish("replica.guilds", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, got2); string(m) != "after" {
		t.Fatalf("wildcard subscriber got %q after cancel", m)
	}
	if err := pub.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := sub.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got1:
		t.Fatalf("cancelled subscription got %q", m)
	default:
	}
}

func TestSubscribedBeforeReturn(t *testing.T) {
	// Publish on another connection right after Subscribe returns: the
	// subscription must already be registered at the server.
	s := natstest.Server(t)
	a, b := natsbus.New(natstest.Conn(t, s)), natsbus.New(natstest.Conn(t, s))
	for i := range 20 {
		subj := fmt.Sprintf("s.%d", i)
		got := make(chan []byte, 1)
		cancel, err := a.Subscribe(subj, func(m []byte) { got <- bytes.Clone(m) })
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Publish(subj, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if m := recv(t, got); len(m) != 1 || m[0] != byte(i) {
			t.Fatalf("got %v", m)
		}
		cancel()
	}
}

func TestErrors(t *testing.T) {
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	b := natsbus.New(nc)
	if _, err := b.Subscribe("x", nil); err == nil {
		t.Fatal("nil func accepted")
	}
	if _, err := b.Subscribe("bad subject", func([]byte) {}); err == nil {
		t.Fatal("subject with a space accepted")
	}
	if err := b.Publish("big", make([]byte, nc.MaxPayload()+1)); err == nil {
		t.Fatal("a message over the maximum payload was accepted")
	}
	if err := b.Close(); err != nil { // New: leaves nc open
		t.Fatal(err)
	}
	if nc.IsClosed() {
		t.Fatal("Close closed a connection the Bus does not own")
	}
	nc.Close()
	if err := b.Publish("x", []byte("y")); !errors.Is(err, natsbus.ErrClosed) {
		t.Fatalf("publish on a closed connection: %v", err)
	}
	if _, err := b.Subscribe("x", func([]byte) {}); !errors.Is(err, natsbus.ErrClosed) {
		t.Fatalf("subscribe on a closed connection: %v", err)
	}
	if _, err := natsbus.Dial("nats://127.0.0.1:1"); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
}

// TestSealedBus: buses sealed with one secret carry messages between
// them; a message published by a plain NATS client, by a bus of another
// secret, or sent again, reaches no subscriber, and is counted.
func TestSealedBus(t *testing.T) {
	s := natstest.Server(t)
	secret := []byte("the replica's cluster secret, 32b")
	pub, err := natsbus.NewSealed(natstest.Conn(t, s), secret)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := natsbus.NewSealed(natstest.Conn(t, s), secret)
	if err != nil {
		t.Fatal(err)
	}
	other, err := natsbus.NewSealed(natstest.Conn(t, s), []byte("another cluster's secret, 32 byt"))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 8)
	cancel, err := sub.Subscribe("replica.lobby.data", func(m []byte) { got <- bytes.Clone(m) })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	raw := natstest.Conn(t, s)
	snooped := make(chan []byte, 1)
	snoop, _ := raw.Subscribe("replica.lobby.data", func(m *nats.Msg) {
		select {
		case snooped <- bytes.Clone(m.Data):
		default:
		}
	})
	raw.Flush()
	if err := pub.Publish("replica.lobby.data", []byte("guild 7: 12 members")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, got); string(m) != "guild 7: 12 members" {
		t.Fatalf("got %q", m)
	}
	captured := recv(t, snooped)
	snoop.Unsubscribe()
	if bytes.Contains(captured, []byte("guild 7")) {
		t.Fatal("the message travels in the clear")
	}
	raw.Publish("replica.lobby.data", []byte("guild 7: 0 members"))
	raw.Publish("replica.lobby.data", captured) // a replay
	other.Publish("replica.lobby.data", []byte("guild 7: mallory's"))
	raw.Flush()
	select {
	case m := <-got:
		t.Fatalf("a forged message was delivered: %q", m)
	case <-time.After(300 * time.Millisecond):
	}
	if d := sub.Dropped(); d["forged"] != 2 || d["replayed"] != 1 {
		t.Fatalf("dropped %v, want 2 forged and 1 replayed", d)
	}
	if _, err := natsbus.NewSealed(natstest.Conn(t, s), []byte("short")); err == nil {
		t.Fatal("a 5-byte secret accepted")
	}
}
