package netlimit

import (
	"net/netip"
	"testing"
	"time"
)

// TestShare: a network holds at most PerNetwork, the whole at most Max,
// a network opens at most twice its rate at once and its rate a second
// after, and what is given back can be taken again; an unbounded key
// counts in the total only.
func TestShare(t *testing.T) {
	a, b := netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("192.0.2.2/32")
	now := time.Unix(1000, 0)
	s := &Share{PerNetwork: 3, Max: 5}
	s.SetRate(10)
	for i, want := range []string{OK, OK, OK, Network} {
		if got := s.Take(a, true, now); got != want {
			t.Fatalf("take %d of a: %q, want %q", i, got, want)
		}
	}
	if got := s.Take(b, true, now); got != OK {
		t.Fatalf("b: %q", got)
	}
	if got := s.Take(netip.Prefix{}, false, now); got != OK {
		t.Fatalf("unbounded: %q", got)
	}
	if got := s.Take(b, true, now); got != Total {
		t.Fatalf("past Max: %q, want %q", got, Total)
	}
	if all, na := s.Open(a); all != 5 || na != 3 {
		t.Fatalf("open %d, a %d; want 5 and 3", all, na)
	}
	s.Give(a, true)
	s.Give(netip.Prefix{}, false)
	if got := s.Take(a, true, now); got != OK {
		t.Fatalf("after a give: %q", got)
	}

	r := &Rate{Rate: 2}
	n := 0
	for range 10 {
		if r.Allow(a, now) {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("a burst took %d, want 4 (twice the rate)", n)
	}
	if r.Allow(a, now.Add(100*time.Millisecond)) {
		t.Fatal("a token 100 ms later at 2 a second")
	}
	if !r.Allow(a, now.Add(time.Second)) || !r.Allow(b, now) {
		t.Fatal("no token a second later, or none for another network")
	}
	if (&Rate{Rate: -1}).Allow(a, now) != true {
		t.Fatal("a negative rate bounds")
	}
}
