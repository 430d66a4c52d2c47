package locksteptest

import (
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

func TestCleanMatch(t *testing.T) {
	link := memnet.LinkConfig{Latency: 30 * time.Millisecond}
	r, err := Run(Options{Config: lockstep.Config{Players: 4}, Duration: time.Minute, Up: link, Down: link, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Delivered != 1 || !r.Identical || r.LateDrops != 0 || r.Frames != 901 {
		t.Fatalf("clean match: %+v", r)
	}
	if r.Unstalled < 0.999 {
		t.Fatalf("a clean link stalled: %+v", r)
	}
}

func TestSameSeedSameMatch(t *testing.T) {
	link := memnet.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.1}
	o := Options{Config: lockstep.Config{Players: 3}, Duration: 30 * time.Second, Up: link, Down: link, Seed: 7}
	a, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(o)
	if a != b {
		t.Fatalf("same seed, different matches:\n%+v\n%+v", a, b)
	}
	o.Seed = 8
	if c, _ := Run(o); c == a {
		t.Fatal("different seeds, same match")
	}
}
