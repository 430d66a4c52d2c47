package codec_test

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

var t0 = time.Unix(1_700_000_000, 0)

func randBytes(seed uint64, n int) []byte {
	rng := newRand(seed)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// splitPackets runs s over payload and returns copies of the packets.
func splitPackets(t *testing.T, s *codec.Splitter, typ uint8, payload []byte) [][]byte {
	t.Helper()
	var out [][]byte
	err := s.Split(typ, payload, func(p []byte) error {
		out = append(out, append([]byte(nil), p...))
		return nil
	})
	if err != nil {
		t.Fatalf("Split: %v", err)
	}
	return out
}

func readOne(t *testing.T, packet []byte) codec.Frame {
	t.Helper()
	f, n, err := codec.ReadFrame(packet)
	if err != nil {
		t.Fatalf("ReadFrame: %v", err)
	}
	if n != len(packet) {
		t.Fatalf("ReadFrame took %d of %d bytes", n, len(packet))
	}
	return f
}

func TestAppendFrameLayout(t *testing.T) {
	got := codec.AppendFrame([]byte{0xee}, 5, []byte("ab"))
	if want := []byte{0xee, 5 << 1, 2, 'a', 'b'}; !bytes.Equal(got, want) {
		t.Fatalf("AppendFrame = % x, want % x", got, want)
	}
	got = codec.AppendFrame(nil, 127, make([]byte, 200))
	if got[0] != 0xfe || got[1] != 0xc8 || got[2] != 0x01 || len(got) != 203 {
		t.Fatalf("AppendFrame header = % x", got[:3])
	}
}

func TestFrameOverhead(t *testing.T) {
	tests := []struct{ n, want int }{
		{0, 2}, {1, 2}, {127, 2}, {128, 3}, {16383, 3}, {16384, 4}, {1<<21 - 1, 4}, {1 << 21, 5},
	}
	for _, tt := range tests {
		if got := codec.FrameOverhead(tt.n); got != tt.want {
			t.Errorf("FrameOverhead(%d) = %d, want %d", tt.n, got, tt.want)
		}
		if got := len(codec.AppendFrame(nil, 1, make([]byte, tt.n))) - tt.n; got != tt.want {
			t.Errorf("AppendFrame adds %d bytes to %d, want %d", got, tt.n, tt.want)
		}
	}
}

func TestFrameRoundTripBackToBack(t *testing.T) {
	type msg struct {
		typ     uint8
		payload []byte
	}
	msgs := []msg{
		{0, nil},
		{1, []byte{}},
		{127, []byte("hello")},
		{3, randBytes(1, 127)},
		{4, randBytes(2, 128)},
		{5, nil},
		{6, randBytes(3, 16384)},
		{7, randBytes(4, 100_000)},
		{0, []byte{0}},
	}
	var buf []byte
	for _, m := range msgs {
		buf = codec.AppendFrame(buf, m.typ, m.payload)
	}
	rest := buf
	for i, m := range msgs {
		f, n, err := codec.ReadFrame(rest)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Split || f.Type != m.typ || !bytes.Equal(f.Payload, m.payload) {
			t.Fatalf("frame %d: type %d split %v payload %d bytes; want type %d, %d bytes", i, f.Type, f.Split, len(f.Payload), m.typ, len(m.payload))
		}
		if n != codec.FrameOverhead(len(m.payload))+len(m.payload) {
			t.Fatalf("frame %d took %d bytes", i, n)
		}
		if len(f.Payload) > 0 && &f.Payload[0] != &rest[n-len(f.Payload)] {
			t.Fatalf("frame %d: payload does not alias the input", i)
		}
		rest = rest[n:]
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left over", len(rest))
	}
}

func TestSplitterSmallMessageIsOneFrame(t *testing.T) {
	s := codec.Splitter{Limit: 1160}
	for _, n := range []int{0, 1, 100, 1160 - 3, 1160 - 2} {
		payload := randBytes(uint64(n), n)
		packets := splitPackets(t, &s, 9, payload)
		if n+codec.FrameOverhead(n) > 1160 {
			continue
		}
		if len(packets) != 1 {
			t.Fatalf("%d bytes: %d packets", n, len(packets))
		}
		if !bytes.Equal(packets[0], codec.AppendFrame(nil, 9, payload)) {
			t.Fatalf("%d bytes: packet is not the unsplit frame", n)
		}
		if len(packets[0]) > s.Limit {
			t.Fatalf("%d bytes: packet of %d over the limit", n, len(packets[0]))
		}
	}
	// The boundary: a payload that fills the packet exactly is not split,
	// one byte more is.
	exact := 1160 - 3 // 1157 bytes take a 2-byte length: 1+2+1157 = 1160
	if got := splitPackets(t, &s, 1, make([]byte, exact)); len(got) != 1 || len(got[0]) != 1160 {
		t.Fatalf("exact fit: %d packets", len(got))
	}
	if got := splitPackets(t, &s, 1, make([]byte, exact+1)); len(got) != 2 || !readOne(t, got[0]).Split {
		t.Fatalf("one byte over: %d packets", len(got))
	}
}

func TestSplitterLargeMessage(t *testing.T) {
	s := codec.Splitter{Limit: 1160}
	payload := randBytes(5, 100_000)
	packets := splitPackets(t, &s, 42, payload)
	if len(packets) < 100_000/1160+1 {
		t.Fatalf("%d packets for 100 KB", len(packets))
	}
	var joined []byte
	var id uint16
	for i, p := range packets {
		if len(p) > s.Limit {
			t.Fatalf("packet %d: %d bytes over limit %d", i, len(p), s.Limit)
		}
		f := readOne(t, p)
		if !f.Split || f.Type != 42 || f.Part != i || f.Parts != len(packets) {
			t.Fatalf("packet %d: %+v", i, f)
		}
		if i == 0 {
			id = f.MsgID
		} else if f.MsgID != id {
			t.Fatalf("packet %d: message id %d, want %d", i, f.MsgID, id)
		}
		if len(f.Payload) == 0 {
			t.Fatalf("packet %d: empty part", i)
		}
		joined = append(joined, f.Payload...)
	}
	if !bytes.Equal(joined, payload) {
		t.Fatal("parts do not concatenate to the message")
	}
	// The next split message gets the next id.
	f := readOne(t, splitPackets(t, &s, 42, payload)[0])
	if f.MsgID != id+1 {
		t.Fatalf("next message id %d, want %d", f.MsgID, id+1)
	}
}

func TestSplitterEveryLimitFits(t *testing.T) {
	payload := randBytes(6, 5000)
	for limit := 11; limit <= 300; limit++ {
		s := codec.Splitter{Limit: limit, MaxParts: codec.MaxPartsLimit}
		packets := splitPackets(t, &s, 1, payload)
		var joined []byte
		for i, p := range packets {
			if len(p) > limit {
				t.Fatalf("limit %d: packet %d has %d bytes", limit, i, len(p))
			}
			joined = append(joined, readOne(t, p).Payload...)
		}
		if !bytes.Equal(joined, payload) {
			t.Fatalf("limit %d: parts do not concatenate to the message", limit)
		}
	}
}

func TestSplitterMaxPartsLimitRoundTrip(t *testing.T) {
	// The most parts a message can have, at the smallest limit that fits
	// the largest header (8 bytes) and one payload byte.
	s := codec.Splitter{Limit: 9, MaxParts: codec.MaxPartsLimit}
	payload := randBytes(7, codec.MaxPartsLimit) // one byte a part
	packets := splitPackets(t, &s, 3, payload)
	if len(packets) != codec.MaxPartsLimit {
		t.Fatalf("%d packets", len(packets))
	}
	r := codec.NewReassembler(codec.ReassemblerConfig{MaxParts: codec.MaxPartsLimit, MaxBytes: 1 << 22})
	var msg []byte
	for i, p := range packets {
		if len(p) > 9 {
			t.Fatalf("packet %d: %d bytes", i, len(p))
		}
		got, err := r.Add(t0, readOne(t, p))
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if got != nil {
			msg = got
		}
	}
	if !bytes.Equal(msg, payload) {
		t.Fatal("reassembled message differs")
	}
	if err := s.Split(3, append(payload, 0), func([]byte) error { return nil }); !errors.Is(err, codec.ErrTooManyParts) {
		t.Fatalf("one part over MaxPartsLimit: %v", err)
	}
}

func TestSplitterMessageIDsWrap(t *testing.T) {
	s := codec.Splitter{Limit: 20}
	payload := make([]byte, 19) // 2 parts of up to 10 bytes
	first := readOne(t, splitPackets(t, &s, 1, payload)[0]).MsgID
	for range 1<<16 - 1 {
		if err := s.Split(1, payload, func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := readOne(t, splitPackets(t, &s, 1, payload)[0]).MsgID; got != first {
		t.Fatalf("after 2^16 messages id %d, want %d", got, first)
	}
}

func TestSplitterErrors(t *testing.T) {
	calls := 0
	emit := func([]byte) error { calls++; return nil }
	tests := []struct {
		name    string
		s       codec.Splitter
		typ     uint8
		n       int
		want    error
		emitted int
	}{
		{"type 128", codec.Splitter{Limit: 1160}, 128, 10, codec.ErrInvalid, 0},
		{"type 255", codec.Splitter{Limit: 1160}, 255, 10, codec.ErrInvalid, 0},
		{"limit 6", codec.Splitter{Limit: 6}, 1, 20, codec.ErrInvalid, 0},
		{"limit 10 fits an exact header", codec.Splitter{Limit: 10}, 1, 20, nil, -1},
		{"limit 0", codec.Splitter{}, 1, 0, codec.ErrInvalid, 0},
		{"limit negative", codec.Splitter{Limit: -5}, 1, 100, codec.ErrInvalid, 0},
		{"over MaxParts", codec.Splitter{Limit: 100, MaxParts: 4}, 1, 1000, codec.ErrTooManyParts, 0},
		{"over default MaxParts", codec.Splitter{Limit: 110}, 1, 110 * codec.DefaultMaxParts, codec.ErrTooManyParts, 0},
		{"MaxParts clamped", codec.Splitter{Limit: 11, MaxParts: 1 << 30}, 1, 11 * codec.MaxPartsLimit, codec.ErrTooManyParts, 0},
		{"at MaxParts", codec.Splitter{Limit: 100, MaxParts: 4}, 1, 360, nil, 4},
		{"under default MaxParts", codec.Splitter{Limit: 110}, 1, 90 * codec.DefaultMaxParts, nil, -1},
		{"tiny limit, empty payload", codec.Splitter{Limit: 2}, 1, 0, nil, 1},
	}
	for _, tt := range tests {
		calls = 0
		err := tt.s.Split(tt.typ, make([]byte, tt.n), emit)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		} else if !errors.Is(err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.want)
		}
		if tt.emitted >= 0 && calls != tt.emitted || tt.emitted < 0 && calls == 0 {
			t.Errorf("%s: emit called %d times, want %d", tt.name, calls, tt.emitted)
		}
	}
}

func TestSplitterEmitErrorStops(t *testing.T) {
	s := codec.Splitter{Limit: 100}
	stop := errors.New("stop")
	calls := 0
	err := s.Split(1, make([]byte, 1000), func([]byte) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 3 {
		t.Fatalf("error %v after %d calls", err, calls)
	}
	if err := s.Split(1, nil, func([]byte) error { return stop }); err != stop {
		t.Fatalf("unsplit emit error: %v", err)
	}
}

// reassemble feeds the frames to r at now and returns the completed
// messages in order.
func reassemble(t *testing.T, r *codec.Reassembler, now time.Time, packets [][]byte) [][]byte {
	t.Helper()
	var done [][]byte
	for i, p := range packets {
		msg, err := r.Add(now, readOne(t, p))
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if msg != nil {
			done = append(done, msg)
		}
	}
	return done
}

func checkEmpty(t *testing.T, r *codec.Reassembler) {
	t.Helper()
	if st := r.Stats(); st.HeldBytes != 0 || st.HeldMsgs != 0 {
		t.Fatalf("reassembler still holds %d bytes in %d messages", st.HeldBytes, st.HeldMsgs)
	}
}

func TestReassemblerShuffled(t *testing.T) {
	rng := newRand(20)
	s := codec.Splitter{Limit: 1160}
	for trial := range 20 {
		payload := randBytes(uint64(trial), 1000+rng.IntN(200_000))
		packets := splitPackets(t, &s, uint8(trial), payload)
		rng.Shuffle(len(packets), func(i, j int) { packets[i], packets[j] = packets[j], packets[i] })
		r := codec.NewReassembler(codec.ReassemblerConfig{})
		var msg []byte
		for i, p := range packets {
			got, err := r.Add(t0, readOne(t, p))
			if err != nil {
				t.Fatalf("trial %d part %d: %v", trial, i, err)
			}
			if got != nil && i != len(packets)-1 {
				t.Fatalf("trial %d: message complete after %d of %d parts", trial, i+1, len(packets))
			}
			if got == nil && i < len(packets)-1 {
				if st := r.Stats(); st.HeldMsgs != 1 || st.HeldBytes < 0 {
					t.Fatalf("trial %d: stats %+v", trial, st)
				}
			}
			msg = got
		}
		if !bytes.Equal(msg, payload) {
			t.Fatalf("trial %d: reassembled %d bytes, want %d", trial, len(msg), len(payload))
		}
		if st := r.Stats(); st.Completed != 1 || st.Refused != 0 || st.Expired != 0 || st.Duplicates != 0 {
			t.Fatalf("trial %d: stats %+v", trial, st)
		}
		checkEmpty(t, r)
	}
}

func TestReassemblerUnsplitPassesThrough(t *testing.T) {
	r := codec.NewReassembler(codec.ReassemblerConfig{MaxBytes: 10})
	pkt := codec.AppendFrame(nil, 2, []byte("hi"))
	msg, err := r.Add(t0, readOne(t, pkt))
	if err != nil || string(msg) != "hi" {
		t.Fatalf("Add(unsplit) = %q, %v", msg, err)
	}
	checkEmpty(t, r)
}

func TestReassemblerDuplicates(t *testing.T) {
	s := codec.Splitter{Limit: 100}
	payload := randBytes(21, 450)
	packets := splitPackets(t, &s, 1, payload)
	r := codec.NewReassembler(codec.ReassemblerConfig{})
	if _, err := r.Add(t0, readOne(t, packets[0])); err != nil {
		t.Fatal(err)
	}
	held := r.Stats().HeldBytes
	for range 3 {
		msg, err := r.Add(t0, readOne(t, packets[0]))
		wantErr(t, err, codec.ErrDuplicatePart)
		if msg != nil {
			t.Fatal("a duplicate returned a message")
		}
	}
	if st := r.Stats(); st.Duplicates != 3 || st.HeldBytes != held || st.Refused != 0 {
		t.Fatalf("stats after duplicates %+v (held before %d)", st, held)
	}
	// The message still completes, with each part once.
	done := reassemble(t, r, t0, packets[1:])
	if len(done) != 1 || !bytes.Equal(done[0], payload) {
		t.Fatalf("completed %d messages", len(done))
	}
	checkEmpty(t, r)
	// A duplicate after completion starts a new message rather than
	// corrupting anything.
	if msg, err := r.Add(t0, readOne(t, packets[0])); err != nil || msg != nil {
		t.Fatalf("late duplicate: %v %v", msg, err)
	}
}

func TestReassemblerInterleaved(t *testing.T) {
	rng := newRand(22)
	s := codec.Splitter{Limit: 200}
	var payloads [][]byte
	var packets [][]byte
	for i := range 10 {
		p := randBytes(uint64(100+i), 300+rng.IntN(3000))
		payloads = append(payloads, p)
		packets = append(packets, splitPackets(t, &s, uint8(i), p)...)
	}
	rng.Shuffle(len(packets), func(i, j int) { packets[i], packets[j] = packets[j], packets[i] })
	r := codec.NewReassembler(codec.ReassemblerConfig{})
	done := reassemble(t, r, t0, packets)
	if len(done) != len(payloads) {
		t.Fatalf("completed %d of %d messages", len(done), len(payloads))
	}
	for _, msg := range done {
		found := false
		for _, p := range payloads {
			if bytes.Equal(msg, p) {
				found = true
			}
		}
		if !found {
			t.Fatalf("completed a message of %d bytes that was never sent", len(msg))
		}
	}
	if r.Stats().Completed != uint64(len(payloads)) {
		t.Fatalf("stats %+v", r.Stats())
	}
	checkEmpty(t, r)
}

func TestReassemblerCopiesPayloads(t *testing.T) {
	s := codec.Splitter{Limit: 64}
	payload := randBytes(23, 500)
	packets := splitPackets(t, &s, 1, payload)
	r := codec.NewReassembler(codec.ReassemblerConfig{})
	scratch := make([]byte, 64)
	var msg []byte
	for _, p := range packets {
		buf := scratch[:copy(scratch, p)] // one reused buffer, like a socket read
		got, err := r.Add(t0, readOne(t, buf))
		if err != nil {
			t.Fatal(err)
		}
		for i := range scratch {
			scratch[i] = 0xdd
		}
		if got != nil {
			msg = got
		}
	}
	if !bytes.Equal(msg, payload) {
		t.Fatal("mutating the packet buffer after Add corrupted the message")
	}
	for i := range msg {
		msg[i] = 0
	}
	if !bytes.Equal(payload, randBytes(23, 500)) {
		t.Fatal("the completed message aliases something")
	}
}

func splitFrame(id uint16, part, parts int, typ uint8, payload []byte) codec.Frame {
	return codec.Frame{Type: typ, Split: true, MsgID: id, Part: part, Parts: parts, Payload: payload}
}

func TestReassemblerTooManyParts(t *testing.T) {
	r := codec.NewReassembler(codec.ReassemblerConfig{MaxParts: 8})
	_, err := r.Add(t0, splitFrame(1, 0, 9, 1, []byte("x")))
	wantErr(t, err, codec.ErrTooManyParts)
	if st := r.Stats(); st.Refused != 1 || st.HeldMsgs != 0 || st.HeldBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := r.Add(t0, splitFrame(1, 0, 8, 1, []byte("x"))); err != nil {
		t.Fatalf("8 parts: %v", err)
	}
	// MaxParts above the limit is clamped.
	r = codec.NewReassembler(codec.ReassemblerConfig{MaxParts: 1 << 30, MaxBytes: 1 << 30})
	_, err = r.Add(t0, splitFrame(1, 0, codec.MaxPartsLimit+1, 1, nil))
	wantErr(t, err, codec.ErrTooManyParts)
	// Default MaxParts.
	r = codec.NewReassembler(codec.ReassemblerConfig{})
	_, err = r.Add(t0, splitFrame(1, 0, codec.DefaultMaxParts+1, 1, nil))
	wantErr(t, err, codec.ErrTooManyParts)
}

func TestReassemblerBadPartIndex(t *testing.T) {
	r := codec.NewReassembler(codec.ReassemblerConfig{})
	for _, f := range []codec.Frame{
		splitFrame(1, 3, 3, 1, nil),
		splitFrame(1, -1, 3, 1, nil),
		splitFrame(1, 0, 0, 1, nil),
		splitFrame(1, 0, -4, 1, nil),
	} {
		if _, err := r.Add(t0, f); !errors.Is(err, codec.ErrBadFrame) {
			t.Errorf("part %d of %d: %v", f.Part, f.Parts, err)
		}
	}
	checkEmpty(t, r)
}

func TestReassemblerPeerBudgetFlood(t *testing.T) {
	const maxBytes = 1 << 16
	cfg := codec.ReassemblerConfig{MaxBytes: maxBytes, MaxParts: 64, Timeout: 5 * time.Second}
	for _, size := range []int{0, 1, 500, 4000} {
		r := codec.NewReassembler(cfg)
		payload := make([]byte, size)
		refused := 0
		for id := range 1 << 16 {
			now := t0.Add(time.Duration(id) * time.Microsecond) // all within the timeout
			msg, err := r.Add(now, splitFrame(uint16(id), 0, 64, 1, payload))
			if msg != nil {
				t.Fatal("a first part completed a 64-part message")
			}
			if err != nil {
				wantErr(t, err, codec.ErrPeerBudget)
				refused++
			}
			st := r.Stats()
			if st.HeldBytes > maxBytes {
				t.Fatalf("size %d, id %d: holding %d bytes, cap %d", size, id, st.HeldBytes, maxBytes)
			}
			if st.HeldMsgs*size > maxBytes {
				t.Fatalf("size %d: %d messages of %d bytes held", size, st.HeldMsgs, size)
			}
		}
		st := r.Stats()
		if refused == 0 || st.Refused != uint64(refused) {
			t.Fatalf("size %d: %d refused, stats %+v", size, refused, st)
		}
		// Bookkeeping is charged: a flood of empty parts is bounded too.
		if st.HeldMsgs > maxBytes/64 {
			t.Fatalf("size %d: %d messages held under a %d-byte cap", size, st.HeldMsgs, maxBytes)
		}
		// Once the flood is stale, a real message gets through again.
		later := t0.Add(time.Minute)
		s := codec.Splitter{Limit: 200}
		good := randBytes(24, 2000)
		done := reassemble(t, r, later, splitPackets(t, &s, 5, good))
		if len(done) != 1 || !bytes.Equal(done[0], good) {
			t.Fatalf("size %d: real message after the flood did not complete", size)
		}
		// The tick's Expire drops what is left of the flood.
		held := r.Stats().HeldMsgs
		if n := r.Expire(later); n != held || n == 0 {
			t.Fatalf("size %d: Expire dropped %d of %d stale messages", size, n, held)
		}
		checkEmpty(t, r)
	}
}

func TestReassemblerPeerBudgetLargeParts(t *testing.T) {
	// Parts that fit the message cap but together overflow the peer cap.
	r := codec.NewReassembler(codec.ReassemblerConfig{MaxBytes: 10_000, MaxParts: 4})
	part := make([]byte, 2000)
	var budgetErrs int
	for id := range 20 {
		for p := range 3 { // never the fourth part
			_, err := r.Add(t0, splitFrame(uint16(id), p, 4, 1, part))
			if err != nil {
				wantErr(t, err, codec.ErrPeerBudget)
				budgetErrs++
			}
			if held := r.Stats().HeldBytes; held > 10_000 {
				t.Fatalf("holding %d bytes", held)
			}
		}
	}
	if budgetErrs == 0 {
		t.Fatal("never refused")
	}
}

func TestReassemblerMaxMessage(t *testing.T) {
	r := codec.NewReassembler(codec.ReassemblerConfig{MaxMessage: 1000, MaxBytes: 1 << 20})
	if _, err := r.Add(t0, splitFrame(7, 0, 3, 1, make([]byte, 600))); err != nil {
		t.Fatal(err)
	}
	_, err := r.Add(t0, splitFrame(7, 1, 3, 1, make([]byte, 401)))
	wantErr(t, err, codec.ErrPeerBudget)
	if st := r.Stats(); st.Refused != 1 {
		t.Fatalf("stats %+v", st)
	}
	checkEmpty(t, r) // the whole message was dropped
	// A single part over the cap.
	_, err = r.Add(t0, splitFrame(8, 0, 2, 1, make([]byte, 1001)))
	wantErr(t, err, codec.ErrPeerBudget)
	checkEmpty(t, r)
	// Exactly at the cap completes.
	if _, err := r.Add(t0, splitFrame(9, 0, 2, 1, make([]byte, 500))); err != nil {
		t.Fatal(err)
	}
	msg, err := r.Add(t0, splitFrame(9, 1, 2, 1, make([]byte, 500)))
	if err != nil || len(msg) != 1000 {
		t.Fatalf("message at the cap: %d bytes, %v", len(msg), err)
	}
	// MaxMessage above MaxBytes is clamped to MaxBytes.
	r = codec.NewReassembler(codec.ReassemblerConfig{MaxMessage: 1 << 30, MaxBytes: 4096})
	_, err = r.Add(t0, splitFrame(1, 0, 2, 1, make([]byte, 5000)))
	wantErr(t, err, codec.ErrPeerBudget)
	checkEmpty(t, r)
}

func TestReassemblerPartMismatch(t *testing.T) {
	tests := []struct {
		name  string
		parts int
		typ   uint8
	}{
		{"parts", 4, 1},
		{"fewer parts", 2, 1},
		{"type", 3, 2},
	}
	for _, tt := range tests {
		r := codec.NewReassembler(codec.ReassemblerConfig{})
		if _, err := r.Add(t0, splitFrame(5, 0, 3, 1, []byte("aaa"))); err != nil {
			t.Fatal(err)
		}
		_, err := r.Add(t0, splitFrame(5, 1, tt.parts, tt.typ, []byte("bbb")))
		wantErr(t, err, codec.ErrPartMismatch)
		if st := r.Stats(); st.Refused != 1 {
			t.Fatalf("%s: stats %+v", tt.name, st)
		}
		checkEmpty(t, r)
		// Another message is unaffected by a mismatch on this one.
		if _, err := r.Add(t0, splitFrame(6, 0, 2, 1, []byte("x"))); err != nil {
			t.Fatal(err)
		}
		_, err = r.Add(t0, splitFrame(5, 0, 2, 2, []byte("c")))
		if err != nil {
			t.Fatalf("%s: new message with the same id: %v", tt.name, err)
		}
		if msg, err := r.Add(t0, splitFrame(6, 1, 2, 1, []byte("y"))); err != nil || string(msg) != "xy" {
			t.Fatalf("%s: other message: %q %v", tt.name, msg, err)
		}
	}
}

func TestReassemblerExpire(t *testing.T) {
	const timeout = 2 * time.Second
	r := codec.NewReassembler(codec.ReassemblerConfig{Timeout: timeout})
	for id := range 5 {
		if _, err := r.Add(t0.Add(time.Duration(id)*100*time.Millisecond), splitFrame(uint16(id), 0, 2, 1, make([]byte, 100))); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Expire(t0); n != 0 {
		t.Fatalf("Expire right away dropped %d", n)
	}
	if n := r.Expire(t0.Add(timeout)); n != 0 {
		t.Fatalf("Expire at exactly Timeout dropped %d", n)
	}
	if n := r.Expire(t0.Add(timeout + 1)); n != 1 {
		t.Fatalf("Expire just after Timeout dropped %d, want 1", n)
	}
	if st := r.Stats(); st.Expired != 1 || st.HeldMsgs != 4 {
		t.Fatalf("stats %+v", st)
	}
	// A part for an expired message starts a new one: it does not complete
	// the old one.
	if msg, err := r.Add(t0.Add(timeout+2), splitFrame(0, 1, 2, 1, []byte("z"))); msg != nil || err != nil {
		t.Fatalf("part of an expired message: %q %v", msg, err)
	}
	if n := r.Expire(t0.Add(time.Hour)); n != 5 {
		t.Fatalf("Expire after an hour dropped %d, want 5", n)
	}
	if st := r.Stats(); st.Expired != 6 || st.Completed != 0 {
		t.Fatalf("stats %+v", st)
	}
	checkEmpty(t, r)
	// Default timeout.
	r = codec.NewReassembler(codec.ReassemblerConfig{})
	r.Add(t0, splitFrame(1, 0, 2, 1, nil))
	if r.Expire(t0.Add(codec.DefaultReassemblyTimeout)) != 0 || r.Expire(t0.Add(codec.DefaultReassemblyTimeout+1)) != 1 {
		t.Fatal("default timeout")
	}
}

func TestReassemblerStaleReplaced(t *testing.T) {
	const timeout = time.Second
	r := codec.NewReassembler(codec.ReassemblerConfig{Timeout: timeout})
	if _, err := r.Add(t0, splitFrame(7, 0, 2, 1, []byte("old"))); err != nil {
		t.Fatal(err)
	}
	// Within the timeout, a different shape is a mismatch ...
	later := t0.Add(timeout + time.Millisecond)
	// ... but after it the old message is gone and the new one (other type,
	// other part count, even the same part index) takes its id.
	if msg, err := r.Add(later, splitFrame(7, 0, 3, 2, []byte("new0"))); msg != nil || err != nil {
		t.Fatalf("first part of the new message: %q %v", msg, err)
	}
	if st := r.Stats(); st.Expired != 1 || st.HeldMsgs != 1 {
		t.Fatalf("stats %+v", st)
	}
	r.Add(later, splitFrame(7, 1, 3, 2, []byte("new1")))
	msg, err := r.Add(later, splitFrame(7, 2, 3, 2, []byte("new2")))
	if err != nil || string(msg) != "new0new1new2" {
		t.Fatalf("new message: %q %v", msg, err)
	}
	checkEmpty(t, r)
}

func TestReadFrameTruncated(t *testing.T) {
	s := codec.Splitter{Limit: 100}
	split := splitPackets(t, &s, 3, make([]byte, 250))[1]
	unsplit := codec.AppendFrame(nil, 3, make([]byte, 300))
	// Every proper prefix of a frame is truncated.
	for _, frame := range [][]byte{split, unsplit} {
		for n := 0; n < len(frame); n++ {
			if _, _, err := codec.ReadFrame(frame[:n]); !errors.Is(err, codec.ErrTruncated) {
				t.Fatalf("prefix %d of a %d-byte frame: %v", n, len(frame), err)
			}
		}
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"type only", []byte{0x02}},
		{"length continues", []byte{0x02, 0x80}},
		{"length 5, 3 bytes", []byte{0x02, 5, 1, 2, 3}},
		{"huge length", []byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1}},
		{"max length", []byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"split, no id", []byte{0x03, 0x01}},
	}
	for _, tt := range tests {
		f, n, err := codec.ReadFrame(tt.in)
		if !errors.Is(err, codec.ErrTruncated) {
			t.Errorf("%s: %v", tt.name, err)
		}
		if n != 0 || f.Payload != nil {
			t.Errorf("%s: a failed read returned %d bytes", tt.name, n)
		}
	}
	// A length that overflows 64 bits.
	_, _, err := codec.ReadFrame([]byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	wantErr(t, err, codec.ErrOverflow)
}

// splitHeader builds a split frame header by hand.
func splitHeader(typ uint8, id uint16, partsMinus1 uint64, indexBits int, index uint64, length uint64) []byte {
	w := codec.NewWriter(nil)
	w.WriteBits(uint64(typ)<<1|1, 8)
	w.WriteBits(uint64(id), 16)
	w.WriteUvarint(partsMinus1)
	w.WriteBits(index, indexBits)
	w.AlignByte()
	w.WriteUvarint(length)
	return w.Bytes()
}

func TestReadFrameSplitHeader(t *testing.T) {
	// The layout of appendPart, checked against a hand-built header.
	for _, tc := range []struct{ part, parts int }{{0, 1}, {0, 2}, {1, 2}, {5, 7}, {200, 300}, {codec.MaxPartsLimit - 1, codec.MaxPartsLimit}} {
		idxBits := 0
		for 1<<idxBits < tc.parts {
			idxBits++
		}
		want := append(splitHeader(9, 0xbeef, uint64(tc.parts-1), idxBits, uint64(tc.part), 3), "abc"...)
		got := codec.AppendPart(nil, 9, 0xbeef, tc.part, tc.parts, []byte("abc"))
		if !bytes.Equal(got, want) {
			t.Fatalf("part %d of %d: % x, want % x", tc.part, tc.parts, got, want)
		}
		f := readOne(t, got)
		if !f.Split || f.Type != 9 || f.MsgID != 0xbeef || f.Part != tc.part || f.Parts != tc.parts || string(f.Payload) != "abc" {
			t.Fatalf("part %d of %d: read %+v", tc.part, tc.parts, f)
		}
	}
}

func TestReadFrameBadSplit(t *testing.T) {
	// Part index not below the part count: 3 parts, index field of 2 bits
	// holding 3.
	_, _, err := codec.ReadFrame(splitHeader(1, 1, 2, 2, 3, 0))
	wantErr(t, err, codec.ErrBadFrame)
	_, _, err = codec.ReadFrame(splitHeader(1, 1, 4, 3, 5, 0))
	wantErr(t, err, codec.ErrBadFrame)
	// The part count over the limit.
	_, _, err = codec.ReadFrame(splitHeader(1, 1, codec.MaxPartsLimit, 15, 0, 0))
	wantErr(t, err, codec.ErrTooManyParts)
	_, _, err = codec.ReadFrame(splitHeader(1, 1, math.MaxUint64, 0, 0, 0))
	wantErr(t, err, codec.ErrTooManyParts)
	// Non-zero padding after the index.
	h := splitHeader(1, 1, 2, 2, 1, 0)
	h[4] |= 0x80
	if _, _, err := codec.ReadFrame(h); err == nil {
		t.Fatal("non-zero header padding accepted")
	}
	// The largest valid part count.
	f, _, err := codec.ReadFrame(splitHeader(1, 1, codec.MaxPartsLimit-1, 14, codec.MaxPartsLimit-1, 0))
	if err != nil || f.Parts != codec.MaxPartsLimit || f.Part != codec.MaxPartsLimit-1 {
		t.Fatalf("largest part count: %+v %v", f, err)
	}
}

func TestReassemblerMakesRoomFromStale(t *testing.T) {
	r := codec.NewReassembler(codec.ReassemblerConfig{MaxBytes: 4096, MaxParts: 8, Timeout: time.Second})
	if _, err := r.Add(t0, splitFrame(1, 0, 8, 1, make([]byte, 3000))); err != nil {
		t.Fatal(err)
	}
	// Within the timeout there is no room.
	_, err := r.Add(t0.Add(time.Second), splitFrame(2, 0, 2, 1, make([]byte, 2000)))
	wantErr(t, err, codec.ErrPeerBudget)
	// After it, Add drops the stale message to make room.
	later := t0.Add(2 * time.Second)
	if _, err := r.Add(later, splitFrame(2, 0, 2, 1, make([]byte, 2000))); err != nil {
		t.Fatalf("no room made from a stale message: %v", err)
	}
	if st := r.Stats(); st.Expired != 1 || st.HeldMsgs != 1 {
		t.Fatalf("stats %+v", st)
	}
	if msg, err := r.Add(later, splitFrame(2, 1, 2, 1, make([]byte, 10))); err != nil || len(msg) != 2010 {
		t.Fatalf("message: %d bytes, %v", len(msg), err)
	}
	checkEmpty(t, r)
}
