package lockstep_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
)

// The room's recording, written as a replay file and read back. The
// matches are played in package lockstep (export_test.go), with its
// internals; they are checked here, where lockstep/replay can be imported.

// writerTo returns what makes a replay writer into file for a test match,
// of the test game "chain" with the given player names, and sets *rw.
func writerTo(file *bytes.Buffer, rw **replay.Writer, players ...string) func(*testing.T, lockstep.Config, time.Time) lockstep.Recorder {
	return func(t *testing.T, cfg lockstep.Config, start time.Time) lockstep.Recorder {
		w, err := replay.NewWriter(file, replay.Header{Game: "chain", Config: cfg, Start: start, Players: players})
		if err != nil {
			t.Fatal(err)
		}
		*rw = w
		return w
	}
}

func TestReplayRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	var rw *replay.Writer
	lockstep.RecordedMatch(t, writerTo(&buf, &rw, "a", "b", "c", "d"), func(t *testing.T, frames int) {
		if err := rw.Close(); err != nil {
			t.Fatal(err)
		}
		st := rw.Stats()
		if st.Frames != frames || st.Blocks < 4 {
			t.Fatalf("writer stats %+v, %d frames cut", st, frames)
		}
	})
	file := buf.Bytes()
	rr, err := replay.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	h := rr.Header()
	if h.Game != "chain" || h.Config.Players != 4 || h.Players[3] != "d" || h.Config.Fill != lockstep.FillRepeat {
		t.Fatalf("header %+v", h)
	}
	res, err := replay.Verify(rr, lockstep.NewChainSim())
	if err != nil {
		t.Fatal(err)
	}
	if res.Mismatch != 0 || res.Checked < 30 || res.Desyncs != 0 || res.Records < res.Checked+2 {
		t.Fatalf("verify %+v", res)
	}
	t.Logf("replay of %d frames: %d bytes; %+v", res.Frames, len(file), res)

	// A different simulation does not verify.
	rr, _ = replay.NewReader(bytes.NewReader(file))
	if res, err := replay.Verify(rr, offSim{lockstep.NewChainSim()}); err != nil || res.Mismatch == 0 || res.FirstMismatch != 0 {
		t.Fatalf("a wrong simulation: %+v, %v", res, err)
	}

	// Every truncation is reported as such; nothing panics.
	for cut := 0; cut < len(file); cut += 1 + cut/8 {
		err := readAll(file[:cut])
		if !errors.Is(err, replay.ErrTruncated) && !errors.Is(err, replay.ErrDamaged) {
			t.Fatalf("cut at %d of %d: %v", cut, len(file), err)
		}
	}
	if err := readAll(file[:len(file)-1]); !errors.Is(err, replay.ErrTruncated) {
		t.Fatalf("last byte cut: %v", err)
	}
	// Every flipped byte is caught.
	for i := 0; i < len(file); i += 1 + i/16 {
		bad := slices.Clone(file)
		bad[i] ^= 0x20
		if err := readAll(bad); err == nil {
			t.Fatalf("byte %d flipped: read without error", i)
		}
	}
	if err := readAll(append(slices.Clone(file), 0)); !errors.Is(err, replay.ErrDamaged) {
		t.Fatalf("trailing byte: %v", err)
	}
}

// offSim is a simulation whose hash is always off by one.
type offSim struct{ lockstep.Simulation }

func (s offSim) Hash() uint64 { return s.Simulation.Hash() + 1 }

func readAll(b []byte) error {
	rr, err := replay.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	for {
		_, err := rr.Next()
		rr.Records()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestColdFrames: a match long enough that most of its frames are cold
// (bodies only): every frame reads back as it was cut, a replay attached
// late records them all and verifies, a player who rejoins catches up
// through them, and the cold log costs a few bytes a frame.
func TestColdFrames(t *testing.T) {
	var file bytes.Buffer
	var rw *replay.Writer
	lockstep.PlayColdFrames(t, writerTo(&file, &rw, "a", "b", "c", "d"), func(t *testing.T) {
		if err := rw.Close(); err != nil {
			t.Fatal(err)
		}
	})
	rr, err := replay.NewReader(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Verify(rr, lockstep.NewChainSim())
	if err != nil || res.Mismatch != 0 || res.Checked < 100 {
		t.Fatalf("the late replay: %+v, %v", res, err)
	}
}

// TestRecordMidMatchRelativeBodies attaches a replay writer after frames
// were cut whose relative bodies no packet needed (every player held every
// frame but the newest): the replay still holds every frame as cut.
func TestRecordMidMatchRelativeBodies(t *testing.T) {
	var buf bytes.Buffer
	var rw *replay.Writer
	room := lockstep.RecordMidMatch(t, writerTo(&buf, &rw))
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	rr, err := replay.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for n := range room.NextFrame() {
		got, err := rr.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		want, _ := room.Frame(n)
		if got.Number != n || len(got.Slots) != len(want.Slots) {
			t.Fatalf("frame %d: got frame %d with %d slots", n, got.Number, len(got.Slots))
		}
		for i := range want.Slots {
			if !want.Slots[i].MadeUp && !lockstep.SameInputs(&got.Slots[i], &want.Slots[i]) {
				t.Fatalf("frame %d slot %d: %v, want %v", n, i, got.Slots[i], want.Slots[i])
			}
		}
	}
}
