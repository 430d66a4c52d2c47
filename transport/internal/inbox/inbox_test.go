package inbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

type msg struct {
	rel bool
	n   int
}

var errClosed = errors.New("closed")

// TestBounds: unreliable messages over their bound are dropped and
// counted, a reliable one over its bound is refused by Offer and waits in
// Push until the reader takes one, and Pop says closed once done is.
func TestBounds(t *testing.T) {
	done := make(chan struct{})
	b := New(done, 2, 1, func(m msg) bool { return m.rel }, errClosed)
	for i := range 3 {
		b.Offer(msg{n: i})
	}
	if b.dropped != 1 {
		t.Fatalf("%d unreliable dropped, want 1", b.dropped)
	}
	if !b.Offer(msg{rel: true, n: 10}) || b.Offer(msg{rel: true, n: 11}) {
		t.Fatal("the reliable bound of 1 not kept by Offer")
	}
	pushed := make(chan bool)
	go func() { pushed <- b.Push(msg{rel: true, n: 12}) }()
	select {
	case <-pushed:
		t.Fatal("Push did not wait for room")
	case <-time.After(50 * time.Millisecond):
	}
	var got []int
	for range 3 {
		m, err := b.Pop(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.n)
	}
	if !<-pushed {
		t.Fatal("Push refused after the reader took one")
	}
	if m, _ := b.Pop(context.Background()); m.n != 12 || len(got) != 3 || got[0] != 0 || got[2] != 10 {
		t.Fatalf("popped %v then %d", got, m.n)
	}
	close(done)
	if _, err := b.Pop(context.Background()); err != errClosed {
		t.Fatalf("Pop after done: %v", err)
	}
}
