package lockstep_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/locksteptest"
	"github.com/tongbu/tongbu/lockstep/replay"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestStrictWithRollbackReplaySpectator: a strict room plays with the
// prediction mode on a jittery uplink that makes a room on its clock drop
// inputs as late: the strict room drops none; its room's simulation
// verifies every confirmed hash, a spectator reaches the same states, a
// player who drops out and comes back predicts again, and the replay it
// records (a strict room's header) verifies against the game.
func TestStrictWithRollbackReplaySpectator(t *testing.T) {
	up := memnet.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 35 * time.Millisecond, Loss: 0.05}
	down := duelLink()
	cfg := lockstep.Config{Players: 2, Hz: 60, Fill: lockstep.FillRepeat, Late: lockstep.LateDrop, InputBytes: 1, HashEvery: 30}
	clock := rollbackMatch(t, locksteptest.RollbackOptions{Config: cfg, Up: up, Down: down, Seed: 3, Duration: 30 * time.Second})
	cfg.Strict = true
	whole := rollbackMatch(t, locksteptest.RollbackOptions{Config: cfg, Up: up, Down: down, Seed: 3, Duration: 30 * time.Second})
	if whole.LateDrops != 0 || whole.Desyncs != 0 {
		t.Fatalf("a strict room dropped %d inputs as late, %d desyncs", whole.LateDrops, whole.Desyncs)
	}
	// With a player who drops out and rejoins: what its client sends while
	// it catches up is late in any room (it has no clock yet).
	var file bytes.Buffer
	rj := &locksteptest.Outage{Slot: 1, From: 8 * time.Second, For: 3 * time.Second}
	r := rollbackMatch(t, locksteptest.RollbackOptions{Config: cfg, Up: up, Down: down, Seed: 3, Duration: 30 * time.Second,
		Replay: &file, Game: "tag", Spectator: true, Rejoin: rj})
	t.Logf("on the clock: %d late drops; strict: %d frames, %d late drops, %d rollbacks, checked %d, watched %d, rejoined %+v",
		clock.LateDrops, r.Frames, r.LateDrops, len(r.Depths), r.Checked, r.Watched, r.Stats[1])
	switch {
	case clock.LateDrops == 0:
		t.Fatal("the link made no input late in a room on its clock: it tests nothing")
	case r.Desyncs != 0 || r.Differed != 0 || r.Compared < r.Checked:
		t.Errorf("desyncs %d; confirmed hashes: %d compared, %d differed", r.Desyncs, r.Compared, r.Differed)
	case r.Frames < 30*60*8/10:
		t.Errorf("%d frames in 30 s at 60 Hz", r.Frames)
	case r.Watched < r.Frames/30/2 || r.WatchDiff != 0:
		t.Errorf("spectator: %d hash frames watched, %d differed", r.Watched, r.WatchDiff)
	case r.Stats[1].Predicted < 500:
		t.Errorf("the rejoined player predicted %d frames", r.Stats[1].Predicted)
	}
	rr, err := replay.NewReader(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Header().Config.Strict {
		t.Fatalf("the replay's room is not strict: %+v", rr.Header().Config)
	}
	res, err := replay.Verify(rr, newTagGame(2))
	if err != nil || res.Frames != r.Frames || res.Mismatch != 0 {
		t.Fatalf("replay: %+v, %v (%d frames cut)", res, err, r.Frames)
	}
}
