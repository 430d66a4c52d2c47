package lockstep

import (
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/internal/vectorfile"
)

var updateVectors = flag.Bool("update-vectors", false, "rewrite testdata/vectors from the encoders")

// vector is one message of SPEC.md section 7, as bytes, with what it says.
type vector struct {
	name, about string
	msg         []byte
}

// vectors builds the test vectors from the package's own encoders, with
// fixed values, so that the files change only when the wire does.
func vectors(t *testing.T) []vector {
	var out []vector
	add := func(name, about string, msg []byte) {
		out = append(out, vector{name, about, append([]byte(nil), msg...)})
	}
	w := codecWriter()
	u := uplink{have: 3, mask: 0b101, maskLen: 3, recv: 7, lossRun: 1, sent: 9,
		hasEcho: true, echoSeq: 6, echoHold: 12, hasHash: true, hashFrame: 0, hash: 0x0123456789abcdef,
		firstSeq: 4, inputs: []upInput{{5, []byte("jump")}, {5, []byte("jump")}, {7, []byte("duck")}}}
	u.encode(w)
	add("input", "7.1 input packet: have 3, mask 101 (frames 4 and 6 held), received 7, loss run 1, sent 9, "+
		"echo of packet 6 held 12 ms, the hash 0123456789abcdef of frame 0, inputs 4..6: "+
		`"jump" for frame 5, the same again for frame 5, "duck" for frame 7`, w.Bytes())

	// A frames packet from a room of 3 (Fill idle): player 0 sent "go" for
	// frame 1 and player 2 left before frame 2.
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, err := NewRoom(Config{Players: 3, Hz: 15}, start, rec)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewClient(room.Config(), 0)
	c.inputFor(start, 1, []byte("go"))
	room.Deliver(0, c.Packet(start), start)
	for n := range 3 {
		if n == 2 {
			room.Leave(2)
		}
		room.Tick(room.Config().cutTime(start, n))
	}
	var last []byte
	for i, m := range rec.unreliable {
		if rec.slots[i] == 0 {
			last = m
		}
	}
	add("frames", "7.2 frames packet to player 0 of a room of 3 (Fill idle), its third: sequence 2, inputs up to 1 arrived, "+
		"no margin report (it rode an earlier packet); frames 0 to 2: frame 0 all made up, "+
		`frame 1 player 0's "go", frame 2 all made up with slot 2 gone`, last)

	w = codecWriter()
	encodeNotices(w, []Notice{{Seq: 4, Target: 2, Applied: -1}, {Seq: 5, Target: 3, Applied: 4}})
	add("notices", "7.3 notices: input 4 for frame 2 dropped; input 5 for frame 3 applied to frame 4", w.Bytes())

	w = codecWriter()
	WriteConfig(w, Config{Players: 2, Hz: 60, Fill: FillRepeat, Late: LateNextFrame, InputBytes: 1, HashEvery: 30, MaxDelay: 200 * time.Millisecond, Substeps: 2}.WithDefaults())
	add("config", "7 room configuration: 2 players, 60 Hz, repeat-last, late inputs to the next frame, 1-byte inputs, "+
		"4 a frame, redundancy 3, max ahead 120, catch-up 32768 bytes, hash every 30, no dumps, events or authority, "+
		"max delay 200 ms, 2 substeps, not repeated, not strict", w.Bytes())

	// Strict lockstep (7.7).
	w = codecWriter()
	WriteConfig(w, Config{Players: 2, Hz: 15, Strict: true, StrictWait: 5 * time.Second}.WithDefaults())
	add("config-strict", "7 room configuration: 2 players, 15 Hz, the defaults, strict with a wait of 5000 ms", w.Bytes())
	w = codecWriter()
	u = uplink{have: 10, recv: 10, sent: 11, firstSeq: 3, inputs: []upInput{{12, []byte("go")}}, sealed: 13}
	u.encode(w)
	add("input-sealed", `7.1 input packet of a strict room (7.7): have 10, received 10, sent 11, input 3 "go" for frame 12, sealed up to frame 13`, w.Bytes())
	w = codecWriter()
	downlinkHeader(w, 20, 3, false, 0, 0)
	w.WriteUvarint(40)
	w.WriteUint(1, maxRunFrames)
	encodeFrameBody(w, &Frame{Number: 40, Slots: make([]Slot, 2)}, nil) // made up: one bit
	w.WriteUint(0, maxRetransmits)
	writePause(w, 31, 2500*time.Millisecond)
	add("frames-paused", "7.2 frames packet of a strict room (7.7) of 2: sequence 20, inputs up to 3 arrived, frame 40 all made up; "+
		"from frame 31 on the room cuts 2500 ms behind its schedule", w.Bytes())
	w = codecWriter()
	encodeWait(w, 40, 0b10)
	add("wait", "7.4 lifecycle message 7 of kind 0, a strict room's wait (7.7): before frame 40 the room waits for slot 1", w.Bytes())
	return out
}

// TestVectors: the hex test vectors in testdata/vectors (SPEC.md section 7
// points to them) are what the encoders write, and decode to what they
// say. Another implementation can check itself against the files byte for
// byte. Run with -update-vectors after a deliberate wire change.
func TestVectors(t *testing.T) {
	dir := filepath.Join("testdata", "vectors")
	for _, v := range vectors(t) {
		if err := vectorfile.Check(dir, v.name, v.about, v.msg, *updateVectors); err != nil {
			t.Fatal(err)
		}
	}
	// And they decode to what they say.
	vs := map[string][]byte{}
	for _, v := range vectors(t) {
		vs[v.name] = v.msg
	}
	var u uplink
	if err := decodeUplink(vs["input"], &u); err != nil || u.have != 3 || u.echoHold != 12 || u.hash != 0x0123456789abcdef ||
		len(u.inputs) != 3 || string(u.inputs[2].data) != "duck" || u.inputs[1].frame != 5 {
		t.Fatalf("input: %+v %v", u, err)
	}
	var d downlink
	if err := decodeDownlink(vs["frames"], 3, &d); err != nil || len(d.frames) != 3 || d.seq != 2 || d.inputAck != 1 || d.hasMargin {
		t.Fatalf("frames: %+v %v", d, err)
	}
	for _, f := range d.frames {
		switch f.Number {
		case 2:
			if !f.Slots[2].Gone || f.Slots[0].Gone {
				t.Fatalf("frame 2: %+v", f)
			}
		case 1:
			if string(f.Slots[0].Inputs[0]) != "go" {
				t.Fatalf("frame 1: %+v", f)
			}
		}
	}
	ns, err := decodeNotices(vs["notices"], nil)
	if err != nil || len(ns) != 2 || ns[1].Applied != 4 {
		t.Fatalf("notices: %+v %v", ns, err)
	}
	cfg, err := ReadConfig(codec.NewReader(vs["config"]))
	if err != nil || cfg.Hz != 60 || cfg.MaxDelay != 200*time.Millisecond || cfg.Substeps != 2 || cfg.Strict {
		t.Fatalf("config: %+v %v", cfg, err)
	}
	cfg, err = ReadConfig(codec.NewReader(vs["config-strict"]))
	if err != nil || !cfg.Strict || cfg.StrictWait != 5*time.Second {
		t.Fatalf("strict config: %+v %v", cfg, err)
	}
	if err := decodeUplink(vs["input-sealed"], &u); err != nil || u.sealed != 13 || len(u.inputs) != 1 || u.inputs[0].frame != 12 {
		t.Fatalf("sealed input: %+v %v", u, err)
	}
	if err := decodeDownlink(vs["frames-paused"], 2, &d); err != nil || len(d.frames) != 1 || d.pauseFrom != 31 || d.pausedMs != 2500 {
		t.Fatalf("paused frames: %+v %v", d, err)
	}
	sub, rd, err := lifeKind(vs["wait"])
	if err != nil || sub != lifeMore || rd.ReadUvarint() != lifeWait {
		t.Fatalf("wait: %d %v", sub, err)
	}
	if f, wait, err := decodeWait(rd, 2); err != nil || f != 40 || wait != 0b10 {
		t.Fatalf("wait: frame %d slots %b: %v", f, wait, err)
	}
}
