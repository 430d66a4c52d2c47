package codec_test

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// The read program of FuzzReader: the input's first byte is the number of
// ops, each op is two bytes (opcode, argument), and the rest is the data.

const (
	opBits = iota
	opBool
	opUint
	opInt
	opUvarint
	opVarint
	opBytes
	opString
	opIDs
	opQuantized
	opAlign
	opPeekSkip
	opSkip
	opDone
	numOps
)

var fuzzQuantizers = []codec.Quantizer{
	codec.MustQuantizer(0, 1, 0.25),
	codec.MustQuantizer(-100, 100, 0.01),
	codec.MustQuantizer(0, 5, 1), // 3 bits, indices 6 and 7 invalid
	codec.MustQuantizer(7, 7, 1), // zero bits
	codec.MustQuantizer(0, 1<<53, 1),
}

var fuzzIntRanges = [][2]int64{
	{0, 0}, {-1, 1}, {-100, 100}, {5, 9}, {-3, 3},
	{math.MinInt64, math.MaxInt64}, {math.MinInt64, 0}, {0, math.MaxInt64},
	{-1 << 40, 1<<40 + 12345}, {10, -10}, // the last is an empty range
}

func fuzzUintMax(arg byte) uint64 {
	m := mask(int(arg % 65))
	if arg&0x80 != 0 {
		m /= 3 // not of the form 2^n-1: some encodings are out of range
	}
	return m
}

func fuzzMaxLen(arg byte) int {
	switch arg {
	case 255:
		return math.MaxInt
	case 254:
		return 1 << 30
	case 253:
		return -1
	}
	return int(arg) * int(arg%16+1)
}

// encodeForProgram writes data that the program reads without error, with
// values drawn from rng: a seed that reaches deep into the program.
func encodeForProgram(prog []byte, seed uint64) []byte {
	rng := newRand(seed)
	w := codec.NewWriter(nil)
	for i := 0; i+1 < len(prog); i += 2 {
		op, arg := prog[i]%numOps, prog[i+1]
		switch op {
		case opBits:
			if n := int(arg % 67); n <= 64 {
				w.WriteBits(rng.Uint64(), n)
			}
		case opBool:
			w.WriteBool(rng.IntN(2) == 1)
		case opUint:
			m := fuzzUintMax(arg)
			if m == math.MaxUint64 {
				w.WriteUint(rng.Uint64(), m)
			} else {
				w.WriteUint(rng.Uint64N(m+1), m)
			}
		case opInt:
			g := fuzzIntRanges[int(arg)%len(fuzzIntRanges)]
			if g[0] <= g[1] {
				span := uint64(g[1]) - uint64(g[0])
				w.WriteInt(int64(uint64(g[0])+rng.Uint64N(min(span, 1000)+1)), g[0], g[1])
			}
		case opUvarint:
			w.WriteUvarint(rng.Uint64() >> rng.IntN(64))
		case opVarint:
			w.WriteVarint(int64(rng.Uint64()) >> rng.IntN(64))
		case opBytes, opString:
			if m := fuzzMaxLen(arg); m >= 0 {
				w.WriteBytes(randBytes(rng.Uint64(), min(m, rng.IntN(20))), m)
			}
		case opIDs:
			n := rng.IntN(int(arg)*8 + 1)
			w.WriteIDs(sortedIDs(rng.Uint64(), n, uint32(n)*uint32(1+rng.IntN(50))), int(arg)*8)
		case opQuantized:
			q := fuzzQuantizers[int(arg)%len(fuzzQuantizers)]
			w.WriteQuantized(q, q.Value(rng.Uint64N(q.MaxIndex()+1)))
		case opAlign:
			w.AlignByte()
		case opPeekSkip:
			w.WriteBits(rng.Uint64(), int(arg%57))
		case opSkip:
			if n := int(arg) - 8; n >= 0 {
				w.WriteBits(0, n)
			}
		}
	}
	return w.Bytes()
}

func readerSeed(ops ...byte) []byte {
	return append([]byte{byte(len(ops) / 2)}, ops...)
}

func FuzzReader(f *testing.F) {
	progs := [][]byte{
		{opBits, 13, opBool, 0, opUint, 200, opInt, 2, opUvarint, 0, opVarint, 0, opDone, 0},
		{opBits, 3, opBytes, 40, opString, 9, opIDs, 4, opQuantized, 1, opAlign, 0, opDone, 0},
		{opUint, 64, opInt, 5, opBytes, 255, opString, 254, opPeekSkip, 30, opSkip, 12, opDone, 0},
		{opIDs, 200, opIDs, 1, opQuantized, 4, opQuantized, 3, opBits, 64, opBits, 0, opDone, 0},
		{opBool, 1, opBytes, 255, opBits, 66, opInt, 9, opSkip, 0},
	}
	for i, prog := range progs {
		for s := range uint64(3) {
			f.Add(append(readerSeed(prog...), encodeForProgram(prog, uint64(i)*10+s)...))
		}
		// The same program over hostile data.
		f.Add(append(readerSeed(prog...), bytes.Repeat([]byte{0xff}, 16)...))
		f.Add(append(readerSeed(prog...), make([]byte, 5)...))
	}
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3})
	// Regression seeds: a length near 2^61 under maxLen MaxInt used to
	// wrap the check against the bits left (see TestReaderHugeMaxLen).
	f.Add(append(readerSeed(opBool, 0, opBytes, 255), hostileLength(1<<61, math.MaxInt, 1, 8)...))
	f.Add(append(readerSeed(opString, 255), hostileLength(1<<61+1, math.MaxInt, 0, 8)...))
	// ReadInt and ReadQuantized after an error (they returned min).
	f.Add(append(readerSeed(opUint, 0x82, opInt, 3, opQuantized, 1), 0xff))

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		nops := int(in[0]) % 48
		prog := in[1:min(len(in), 1+2*nops)]
		data := in[len(prog)+1:]
		r := codec.NewReader(data)
		total := len(data) * 8
		for i := 0; i+1 < len(prog); i += 2 {
			op, arg := prog[i]%numOps, prog[i+1]
			errBefore := r.Err()
			posBefore := r.Pos()
			// zero reports whether the op returned its zero value.
			zero := true
			valid := func(ok bool, format string, args ...any) {
				if r.Err() == nil && !ok {
					t.Fatalf("op %d: "+format, append([]any{i / 2}, args...)...)
				}
			}
			switch op {
			case opBits:
				n := int(arg % 67)
				v := r.ReadBits(n)
				zero = v == 0
				valid(n <= 64 && v&^mask(n) == 0, "ReadBits(%d) = %#x", n, v)
			case opBool:
				zero = !r.ReadBool()
			case opUint:
				m := fuzzUintMax(arg)
				v := r.ReadUint(m)
				zero = v == 0
				valid(v <= m, "ReadUint(%d) = %d", m, v)
			case opInt:
				g := fuzzIntRanges[int(arg)%len(fuzzIntRanges)]
				v := r.ReadInt(g[0], g[1])
				zero = v == 0
				valid(g[0] <= v && v <= g[1], "ReadInt(%d, %d) = %d", g[0], g[1], v)
			case opUvarint:
				zero = r.ReadUvarint() == 0
			case opVarint:
				zero = r.ReadVarint() == 0
			case opBytes:
				m := fuzzMaxLen(arg)
				dst := []byte("pre")
				out := r.ReadBytes(dst, m)
				zero = len(out) == 3
				if string(out[:3]) != "pre" {
					t.Fatalf("ReadBytes lost dst")
				}
				valid(len(out)-3 <= m, "ReadBytes(%d) returned %d bytes", m, len(out)-3)
				valid(8*(len(out)-3) <= r.Pos()-posBefore, "ReadBytes returned %d bytes from %d bits", len(out)-3, r.Pos()-posBefore)
			case opString:
				m := fuzzMaxLen(arg)
				s := r.ReadString(m)
				zero = s == ""
				valid(len(s) <= m, "ReadString(%d) returned %d bytes", m, len(s))
				valid(8*len(s) <= r.Pos()-posBefore, "ReadString returned %d bytes from %d bits", len(s), r.Pos()-posBefore)
			case opIDs:
				m := int(arg) * 8
				ids := r.ReadIDs([]uint32{7}, m)
				if ids[0] != 7 {
					t.Fatal("ReadIDs lost dst")
				}
				// A failing ReadIDs may return the IDs it read before the
				// failure; they must still be increasing.
				zero = len(ids) == 1 || errBefore == nil
				for j := 2; j < len(ids); j++ {
					if ids[j] <= ids[j-1] {
						t.Fatalf("ReadIDs returned %v", ids[1:])
					}
				}
				if len(ids)-1 > m {
					t.Fatalf("ReadIDs returned %d IDs, max %d", len(ids)-1, m)
				}
			case opQuantized:
				q := fuzzQuantizers[int(arg)%len(fuzzQuantizers)]
				v := r.ReadQuantized(q)
				// An out-of-range index reads as the low end (documented on
				// the Writer side as "nearest end"); a read after an error
				// as 0.
				zero = v == 0 || (errBefore == nil && v == q.Min())
				valid(v >= q.Min() && v <= q.Max() && q.Round(v) == v, "ReadQuantized = %g, not on [%g, %g]", v, q.Min(), q.Max())
			case opAlign:
				r.AlignByte()
				valid(r.Pos()%8 == 0, "AlignByte left pos %d", r.Pos())
			case opPeekSkip:
				p := r.Peek()
				zero = errBefore == nil || p == 0 // Skip may fail after a non-zero Peek
				n := min(int(arg%57), r.Remaining())
				peeked := *r // a copy reads the same bits
				if got := peeked.ReadBits(n); got != p&mask(n) {
					t.Fatalf("Peek %#x, ReadBits(%d) = %#x", p, n, got)
				}
				r.Skip(int(arg % 65))
			case opSkip:
				r.Skip(int(arg) - 8)
			case opDone:
				err := r.Done()
				if err != r.Err() {
					t.Fatal("Done and Err disagree")
				}
				if err == nil && r.Remaining() >= 8 {
					t.Fatalf("Done accepted %d unread bits", r.Remaining())
				}
			}
			if r.Remaining() < 0 || r.Pos() < 0 || r.Pos()+r.Remaining() != total {
				t.Fatalf("op %d: pos %d remaining %d of %d bits", i/2, r.Pos(), r.Remaining(), total)
			}
			if r.Pos() < posBefore {
				t.Fatalf("op %d: pos went back from %d to %d", i/2, posBefore, r.Pos())
			}
			if r.Err() != nil && r.Remaining() != 0 {
				t.Fatalf("op %d: %d bits remain after error %v", i/2, r.Remaining(), r.Err())
			}
			if errBefore != nil {
				if r.Err() != errBefore {
					t.Fatalf("op %d: error %v replaced by %v", i/2, errBefore, r.Err())
				}
				if !zero {
					t.Fatalf("op %d (%d): a read after error %v returned data", i/2, op, errBefore)
				}
			} else if r.Err() != nil && !zero {
				t.Fatalf("op %d (%d): the failing read returned data (%v)", i/2, op, r.Err())
			}
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add(codec.AppendFrame(nil, 3, []byte("hello")))
	f.Add(codec.AppendFrame(codec.AppendFrame(nil, 0, nil), 127, make([]byte, 200)))
	s := codec.Splitter{Limit: 60}
	s.Split(9, randBytes(40, 500), func(p []byte) error {
		f.Add(append([]byte(nil), p...))
		return nil
	})
	f.Add(codec.AppendPart(nil, 1, 0xffff, codec.MaxPartsLimit-1, codec.MaxPartsLimit, []byte("x")))
	f.Add([]byte{0x02, 0x80, 0x00})                                                       // non-minimal length
	f.Add([]byte{0x03, 0x01, 0x00, 0x02, 0x03, 0x00})                                     // index 3 of 3
	f.Add([]byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}) // overflow
	f.Fuzz(func(t *testing.T, in []byte) {
		rest := in
		for len(rest) > 0 {
			fr, n, err := codec.ReadFrame(rest)
			if err != nil {
				if n != 0 || fr.Payload != nil {
					t.Fatalf("failed read returned %d bytes", n)
				}
				return
			}
			if n <= 0 || n > len(rest) || len(fr.Payload) >= n {
				t.Fatalf("took %d of %d bytes for a %d-byte payload", n, len(rest), len(fr.Payload))
			}
			if len(fr.Payload) > 0 && &fr.Payload[0] != &rest[n-len(fr.Payload)] {
				t.Fatal("payload is not the end of the frame in the input")
			}
			if fr.Type > codec.MaxFrameType {
				t.Fatalf("type %d", fr.Type)
			}
			var re []byte
			if fr.Split {
				if fr.Parts < 1 || fr.Parts > codec.MaxPartsLimit || fr.Part < 0 || fr.Part >= fr.Parts {
					t.Fatalf("part %d of %d", fr.Part, fr.Parts)
				}
				re = codec.AppendPart(nil, fr.Type, fr.MsgID, fr.Part, fr.Parts, fr.Payload)
			} else {
				re = codec.AppendFrame(nil, fr.Type, fr.Payload)
				if len(re) != codec.FrameOverhead(len(fr.Payload))+len(fr.Payload) {
					t.Fatal("FrameOverhead disagrees with AppendFrame")
				}
			}
			// The encoders write minimal varints. An input header of the
			// same length must be byte for byte the same; a longer one
			// holds non-minimal varints (which ReadFrame accepts).
			switch {
			case len(re) == n:
				if !bytes.Equal(re, rest[:n]) {
					t.Fatalf("re-encoded % x, read % x", re, rest[:n])
				}
			case len(re) > n:
				t.Fatalf("re-encoding grew %d bytes to %d", n, len(re))
			}
			back, m, err := codec.ReadFrame(re)
			if err != nil || m != len(re) || back.Type != fr.Type || back.Split != fr.Split ||
				back.MsgID != fr.MsgID || back.Part != fr.Part || back.Parts != fr.Parts || !bytes.Equal(back.Payload, fr.Payload) {
				t.Fatalf("re-encoded frame reads as %+v, %v; want %+v", back, err, fr)
			}
			rest = rest[n:]
		}
	})
}

// reassemblyInput builds a FuzzReassembler input: before each frame, a
// byte that advances the clock (255 also calls Expire).
func reassemblyInput(frames ...[]byte) []byte {
	var in []byte
	for i, fr := range frames {
		in = append(in, byte(i%3))
		in = append(in, fr...)
	}
	return in
}

func FuzzReassembler(f *testing.F) {
	s := codec.Splitter{Limit: 40, MaxParts: 16}
	var frames [][]byte
	collect := func(p []byte) error { frames = append(frames, append([]byte(nil), p...)); return nil }
	s.Split(1, randBytes(50, 150), collect)
	s.Split(2, randBytes(51, 60), collect)
	s.Split(3, []byte("small"), collect)
	f.Add(reassemblyInput(frames...))
	rev := slices.Clone(frames)
	slices.Reverse(rev)
	f.Add(reassemblyInput(rev...))
	f.Add(reassemblyInput(frames[0], frames[0], frames[1], frames[len(frames)-1]))
	f.Add(reassemblyInput(codec.AppendPart(nil, 1, 1, 0, 8, make([]byte, 3000)), codec.AppendPart(nil, 1, 2, 0, 8, make([]byte, 3000))))
	f.Add(append([]byte{255}, reassemblyInput(frames[:3]...)...))

	const (
		maxBytes   = 4096
		maxParts   = 8
		maxMessage = 2048
	)
	f.Fuzz(func(t *testing.T, in []byte) {
		r := codec.NewReassembler(codec.ReassemblerConfig{MaxBytes: maxBytes, MaxParts: maxParts, MaxMessage: maxMessage, Timeout: time.Second})
		now := t0
		rest := in
		for len(rest) > 1 {
			tick := rest[0]
			now = now.Add(time.Duration(tick) * 20 * time.Millisecond)
			if tick == 255 {
				r.Expire(now)
			}
			fr, n, err := codec.ReadFrame(rest[1:])
			if err != nil {
				rest = rest[2:]
				continue
			}
			payload := slices.Clone(fr.Payload)
			rest = rest[1+n:]
			msg, err := r.Add(now, fr)
			st := r.Stats()
			if st.HeldBytes > maxBytes || st.HeldBytes < 0 || st.HeldMsgs < 0 {
				t.Fatalf("stats %+v over cap %d", st, maxBytes)
			}
			if st.HeldMsgs > 0 && st.HeldBytes == 0 {
				t.Fatalf("holding %d messages for free", st.HeldMsgs)
			}
			if !fr.Split {
				if err != nil || !bytes.Equal(msg, payload) {
					t.Fatalf("unsplit frame: %q, %v", msg, err)
				}
				continue
			}
			if msg != nil && (err != nil || len(msg) > maxMessage) {
				t.Fatalf("completed a %d-byte message (cap %d), err %v", len(msg), maxMessage, err)
			}
			if fr.Parts > maxParts && err == nil {
				t.Fatalf("accepted a part of a %d-part message", fr.Parts)
			}
		}
		// Accounting: once everything is stale, nothing is held.
		r.Expire(now.Add(time.Hour))
		if st := r.Stats(); st.HeldBytes != 0 || st.HeldMsgs != 0 {
			t.Fatalf("after expiring everything: %+v", st)
		}
	})
}

func FuzzDecompress(f *testing.F) {
	f.Add(codec.Compress(nil, compressibleText(3000)))
	f.Add(codec.Compress(nil, randBytes(60, 100)))
	f.Add(codec.Compress(nil, make([]byte, 1<<16)))
	f.Add(codec.Compress(nil, make([]byte, 1<<16+1)))
	f.Add(codec.Compress(nil, nil))
	f.Add(hostileSnappy(60 << 20))
	f.Add(append([]byte{methodSnappy}, densestSnappy(100)...))
	f.Add([]byte{2, 1, 2, 3})
	const maxLen = 1 << 16
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := codec.Decompress(nil, in, maxLen)
		if len(out) > maxLen {
			t.Fatalf("decoded %d bytes, cap %d", len(out), maxLen)
		}
		// On error dst comes back with its length unchanged (possibly in a
		// buffer Decompress grew before the block turned out corrupt).
		if err != nil && len(out) != 0 {
			t.Fatalf("error %v with %d bytes", err, len(out))
		}
		if len(in) > 0 && in[0] == methodStored && len(in)-1 <= maxLen && (err != nil || !bytes.Equal(out, in[1:])) {
			t.Fatalf("stored frame: %v", err)
		}
		// Appending to a prefix gives the same result.
		pre, err2 := codec.Decompress([]byte("pre"), in, maxLen)
		if (err == nil) != (err2 == nil) || len(pre) < 3 || string(pre[:3]) != "pre" || !bytes.Equal(pre[3:], out) {
			t.Fatalf("with a prefix: %v vs %v", err2, err)
		}
		// Round trip of the input itself.
		frame := codec.Compress(nil, in)
		if len(frame) > len(in)+1 {
			t.Fatalf("Compress grew %d bytes to %d", len(in), len(frame))
		}
		back, err := codec.Decompress(nil, frame, len(in))
		if err != nil || !bytes.Equal(back, in) {
			t.Fatalf("round trip: %v", err)
		}
		if len(in) > 0 {
			if _, err := codec.Decompress(nil, frame, len(in)-1); err == nil {
				t.Fatal("round trip under a cap one byte too small")
			}
		}
	})
}

// idsFromBytes derives a strictly increasing list from b: each pair of
// bytes is a gap and a shift.
func idsFromBytes(b []byte) []uint32 {
	var ids []uint32
	var next uint64
	for i := 0; i+1 < len(b); i += 2 {
		next += uint64(b[i]) << (b[i+1] % 33)
		if next > math.MaxUint32 {
			break
		}
		ids = append(ids, uint32(next))
		next++
	}
	return ids
}

func FuzzIDs(f *testing.F) {
	for _, ids := range idLists() {
		w := codec.NewWriter(nil)
		w.WriteIDs(ids, 4096)
		f.Add(append([]byte{0xff}, w.Bytes()...))
	}
	f.Add([]byte{1, 0, 1, 0, 1, 0, 1, 0, 1, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 31, 0, 31, 5, 31, 255, 7})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		// Raw input: the first byte picks maxCount.
		maxCount := int(in[0]) * 17
		r := codec.NewReader(in[1:])
		got := r.ReadIDs(nil, maxCount)
		if len(got) > maxCount {
			t.Fatalf("%d IDs, max %d", len(got), maxCount)
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("IDs not increasing: %v", got)
			}
		}
		if r.Err() == nil {
			// A list that decodes is valid input for WriteIDs and round
			// trips.
			w := codec.NewWriter(nil)
			w.WriteIDs(got, maxCount)
			back := codec.NewReader(w.Bytes()).ReadIDs(nil, maxCount)
			if w.Err() != nil || !slices.Equal(back, got) {
				t.Fatalf("re-encoding %v: %v", got, w.Err())
			}
		}

		// A list derived from the input round trips.
		ids := idsFromBytes(in)
		mc := len(ids) + int(in[0]%4)
		w := codec.NewWriter(nil)
		w.WriteBits(uint64(in[0]), int(in[0]%8))
		w.WriteIDs(ids, mc)
		if w.Err() != nil {
			t.Fatalf("WriteIDs(%v): %v", ids, w.Err())
		}
		if n := w.Len() - int(in[0]%8); n != codec.IDsBits(ids, mc) {
			t.Fatalf("wrote %d bits, IDsBits %d", n, codec.IDsBits(ids, mc))
		}
		rd := codec.NewReader(w.Bytes())
		rd.ReadBits(int(in[0] % 8))
		if back := rd.ReadIDs(nil, mc); !slices.Equal(back, ids) || rd.Done() != nil {
			t.Fatalf("round trip of %v: %v, %v", ids, back, rd.Err())
		}
	})
}

func TestFuzzHelpers(t *testing.T) {
	// The seed programs decode without error over their own encodings, so
	// the seeds exercise every op past its first byte.
	progs := [][]byte{
		{opBits, 13, opBool, 0, opUint, 200, opInt, 2, opUvarint, 0, opVarint, 0, opDone, 0},
		{opBits, 3, opBytes, 40, opString, 9, opIDs, 4, opQuantized, 1, opAlign, 0, opDone, 0},
		{opIDs, 200, opIDs, 1, opQuantized, 4, opQuantized, 3, opBits, 64, opBits, 0, opDone, 0},
	}
	for i, prog := range progs {
		data := encodeForProgram(prog, uint64(i))
		r := codec.NewReader(data)
		for j := 0; j < len(prog); j += 2 {
			op, arg := prog[j], prog[j+1]
			switch op {
			case opBits:
				r.ReadBits(int(arg % 67))
			case opBool:
				r.ReadBool()
			case opUint:
				r.ReadUint(fuzzUintMax(arg))
			case opInt:
				g := fuzzIntRanges[int(arg)%len(fuzzIntRanges)]
				r.ReadInt(g[0], g[1])
			case opUvarint:
				r.ReadUvarint()
			case opVarint:
				r.ReadVarint()
			case opBytes:
				r.ReadBytes(nil, fuzzMaxLen(arg))
			case opString:
				r.ReadString(fuzzMaxLen(arg))
			case opIDs:
				r.ReadIDs(nil, int(arg)*8)
			case opQuantized:
				r.ReadQuantized(fuzzQuantizers[int(arg)%len(fuzzQuantizers)])
			case opAlign:
				r.AlignByte()
			case opDone:
				if err := r.Done(); err != nil {
					t.Fatalf("program %d: %v", i, err)
				}
			}
		}
	}
	if ids := idsFromBytes([]byte{1, 0, 1, 0, 0, 32}); !slices.Equal(ids, []uint32{1, 3, 4}) {
		t.Fatalf("idsFromBytes = %v", ids)
	}
}
