package interest

import (
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport"
)

func testConfig() Config {
	return Config{Width: 12, Height: 12, MaxEntities: 4096}
}

// TestKnownSetMatchesTruth plays long seeded random walks (idle, walking
// and running players, wandering NPCs) and requires every client's known
// set to equal the world's 3x3 set within 2.5 s of any change, with no
// packet ever carrying an entity outside its receiver's range.
func TestKnownSetMatchesTruth(t *testing.T) {
	for _, tc := range []struct {
		name string
		loss float64
	}{{"clean", 0}, {"loss5", 0.05}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				link := transport.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: tc.loss}
				seed := uint64(11)
				if v, err := strconv.ParseUint(os.Getenv("SEED"), 10, 64); err == nil {
					seed = v
				}
				h := newHarness(t, harnessOptions{cfg: testConfig(), players: 24, npcs: 400, link: link, seed: seed})
				h.run(3*time.Minute, true)
				// Let every walk end, then the clients must hold exactly the truth.
				for _, p := range h.players {
					p.b = idle
				}
				h.npcsStill = true
				h.run(30*time.Second, true) // the slowest NPC walk is under 25 s
				now := time.Now()
				p99 := h.episodeQuantile(0.99, now)
				t.Logf("packets %d, differences %d, p99 %v, p99.9 %v, max %v (%s)", h.packets, len(h.episodes), p99, h.episodeQuantile(0.999, now), h.maxDiff, h.maxDiffWho)
				if p99 > 2500*time.Millisecond {
					t.Errorf("99th percentile of the known set's differences from the truth is %v, over 2.5 s", p99)
				}
				// Every difference closes within 2.5 s on a clean link. Under
				// loss a lost forced sync (due 2 s after the entry) is repaired
				// about 375 ms later (a probe packet two frames behind it shows
				// the gap, then a round trip), and at 5% iid loss a repair is
				// now and then lost too: no bound holds for every episode, so
				// 99.9% must close within 2.5 s and all within three repairs
				// (14 seeds: p99.9 at most 2.375 s, max 3.06 s).
				bound := 2500 * time.Millisecond
				if tc.loss > 0 {
					if q := h.episodeQuantile(0.999, now); q > 2500*time.Millisecond {
						t.Errorf("99.9th percentile of the differences is %v, over 2.5 s", q)
					}
					bound += 3 * 375 * time.Millisecond
				}
				if h.maxDiff > bound {
					t.Errorf("a difference lasted %v, over %v: %s", h.maxDiff, bound, h.maxDiffWho)
				}
				for _, p := range h.players {
					for id, d := range p.diff {
						t.Errorf("client %d still differs from the truth about entity %d after everything stood still (%s since %v)", p.id, id, d.what, d.since.Sub(h.w.start))
					}
				}
				if h.leaks > 0 {
					t.Errorf("%d messages about entities outside the receiver's range", h.leaks)
				}
			})
		})
	}
}
