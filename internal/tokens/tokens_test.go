package tokens

import (
	"testing"
	"time"
)

// TestBucket: a fresh bucket gives its burst at once, then one token per
// 1/rate, never more than the burst after a long wait.
func TestBucket(t *testing.T) {
	var b Bucket
	t0 := time.Unix(100, 0)
	n := 0
	for b.Take(t0, 10, 3) {
		n++
	}
	if n != 3 {
		t.Fatalf("a fresh bucket gave %d, want its burst 3", n)
	}
	if b.Full(t0, 10, 3) {
		t.Fatal("an empty bucket reads full")
	}
	if !b.Take(t0.Add(100*time.Millisecond), 10, 3) || b.Take(t0.Add(100*time.Millisecond), 10, 3) {
		t.Fatal("100 ms at 10 a second is one token")
	}
	later := t0.Add(time.Hour)
	if !b.Full(later, 10, 3) {
		t.Fatal("an hour later the bucket is not full")
	}
	n = 0
	for b.Take(later, 10, 3) {
		n++
	}
	if n != 3 {
		t.Fatalf("after an hour %d tokens, want the burst 3", n)
	}
}
