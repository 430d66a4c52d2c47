package interest

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestNoOracle: a skill aimed at an entity far outside the player's range
// is refused exactly as one aimed at an ID nobody holds. The player's
// downlink is the same byte for byte in the two cases, so it cannot tell
// which IDs exist beyond its range; a target in range is accepted.
func TestNoOracle(t *testing.T) {
	run := func(target func(far ID) ID) ([][]byte, error, Stats) {
		rec := &recorder{}
		w, err := NewWorld(testConfig(), time.Unix(0, 0), rec)
		if err != nil {
			t.Fatal(err)
		}
		me, _ := w.Spawn(Player, Logic{Pos: Vec{500, 500}}, Display{Name: "me"})
		w.Spawn(NPC, Logic{Pos: Vec{600, 500}}, Display{Name: "near"}) // far - 1
		far, _ := w.Spawn(NPC, Logic{Pos: w.cfg.Bounds()}, Display{Name: "far"})
		if err := w.Join(me); err != nil {
			t.Fatal(err)
		}
		tick := func(n int) { w.Tick(time.Unix(0, 0).Add(time.Duration(n) * w.cfg.Period())) }
		for n := 1; n <= 5; n++ {
			tick(n)
		}
		rec.msgs = nil
		err = w.Deliver(me, uplinkBytes(t, w, &uplink{firstSeq: 1, cmds: []command{{tag: cmdSkill, frame: w.Frame(), skill: 9, target: target(far)}}}))
		for n := 6; n <= 20; n++ {
			tick(n)
		}
		return rec.msgs, err, w.Stats()
	}
	farMsgs, farErr, farStats := run(func(far ID) ID { return far })
	noneMsgs, noneErr, noneStats := run(func(far ID) ID { return far + 1000 })
	if !errors.Is(farErr, ErrUnknown) || !errors.Is(noneErr, ErrUnknown) {
		t.Fatalf("errors: far %v, unknown %v; want ErrUnknown for both", farErr, noneErr)
	}
	if farStats.Dropped != noneStats.Dropped {
		t.Fatalf("drops differ: far %v, unknown %v", farStats.Dropped, noneStats.Dropped)
	}
	if len(farMsgs) != len(noneMsgs) {
		t.Fatalf("%d messages after a far target, %d after an unknown one", len(farMsgs), len(noneMsgs))
	}
	for i := range farMsgs {
		if !bytes.Equal(farMsgs[i], noneMsgs[i]) {
			t.Fatalf("message %d differs between a far target and an unknown one", i)
		}
	}
	// In range, the skill is taken.
	nearMsgs, nearErr, _ := run(func(far ID) ID { return far - 1 })
	if nearErr != nil {
		t.Fatalf("a skill at an entity in range: %v", nearErr)
	}
	if bytes.Equal(bytes.Join(nearMsgs, nil), bytes.Join(noneMsgs, nil)) {
		t.Fatal("a skill in range changed nothing the player was sent")
	}
}
