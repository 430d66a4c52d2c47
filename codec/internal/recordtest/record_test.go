package recordtest

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tongbu/tongbu/codec"
)

func randSample(rng *rand.Rand) Sample {
	s := Sample{
		Alive:   rng.IntN(2) == 1,
		Mode:    Mode(rng.IntN(6)),
		X:       uint16(rng.IntN(40001)),
		Y:       int32(rng.IntN(140001) - 70000),
		Heading: float32(rng.IntN(721)) / 2,
		Score:   rng.Int64() >> rng.IntN(64),
		Gold:    rng.Uint32() >> rng.IntN(32),
		Tiny:    int8(rng.IntN(256) - 128),
		Secret:  "local only",
	}
	if rng.IntN(2) == 1 {
		s.Score = -s.Score
	}
	if rng.IntN(3) > 0 {
		s.Level = uint8(1 + rng.IntN(99))
	}
	s.TargetX = s.X
	if rng.IntN(2) == 1 {
		s.TargetX = uint16(min(max(int(s.X)+rng.IntN(601)-300, 0), 65535))
	}
	name := make([]byte, rng.IntN(25))
	for i := range name {
		name[i] = byte('a' + rng.IntN(26))
	}
	s.Name = string(name)
	if n := rng.IntN(41); n > 0 {
		s.Blob = make([]byte, n)
		for i := range s.Blob {
			s.Blob[i] = byte(rng.Uint32())
		}
	}
	return s
}

// mutate changes a few fields of s, some by small steps (the delta= path)
// and some by large ones.
func mutate(rng *rand.Rand, s Sample) Sample {
	o := randSample(rng)
	out := s
	out.Blob = append([]byte(nil), s.Blob...)
	if len(out.Blob) == 0 {
		out.Blob = nil
	}
	for range 1 + rng.IntN(4) {
		switch rng.IntN(12) {
		case 0:
			out.Alive = !out.Alive
		case 1:
			out.Mode = o.Mode
		case 2:
			out.Level = o.Level
		case 3:
			out.X = uint16(min(max(int(out.X)+rng.IntN(65)-32, 0), 40000))
		case 4:
			out.X = o.X
		case 5:
			out.Y = min(max(out.Y+int32(rng.IntN(513)-256), -70000), 70000)
		case 6:
			out.Y = o.Y
		case 7:
			out.Heading = o.Heading
		case 8:
			out.Score, out.Gold = o.Score, o.Gold
		case 9:
			out.Name = o.Name
		case 10:
			out.Blob = o.Blob
		case 11:
			out.Tiny = o.Tiny
		}
	}
	// Keep the target within the relative range of the (possibly moved) X.
	if d := int(out.TargetX) - int(out.X); d < -300 || d > 300 {
		out.TargetX = out.X
	}
	return out
}

func TestSampleFullRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var w codec.Writer
	var m codec.Writer
	for range 5000 {
		s := randSample(rng)
		w.Reset(nil)
		s.EncodeFull(&w)
		if err := w.Err(); err != nil {
			t.Fatalf("encode %+v: %v", s, err)
		}
		if got := s.FullBits(); got != w.Len() {
			t.Fatalf("FullBits = %d, wrote %d", got, w.Len())
		}
		m.Measure()
		s.EncodeFull(&m)
		if m.Len() != w.Len() {
			t.Fatalf("measure mode counted %d bits, wrote %d", m.Len(), w.Len())
		}
		got := Sample{Secret: "local only"}
		r := codec.NewReader(w.Bytes())
		if err := got.DecodeFull(r); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if err := r.Done(); err != nil {
			t.Fatalf("done: %v", err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
		}
	}
}

func TestSampleDeltaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var w codec.Writer
	smaller := 0
	for range 5000 {
		base := randSample(rng)
		cur := mutate(rng, base)
		w.Reset(nil)
		cur.EncodeDelta(&w, &base)
		if err := w.Err(); err != nil {
			t.Fatalf("encode delta: %v", err)
		}
		if got := cur.DeltaBits(&base); got != w.Len() {
			t.Fatalf("DeltaBits = %d, wrote %d", got, w.Len())
		}
		var got Sample
		r := codec.NewReader(w.Bytes())
		if err := got.DecodeDelta(r, &base); err != nil {
			t.Fatalf("decode delta: %v", err)
		}
		if err := r.Done(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, cur) {
			t.Fatalf("delta round trip:\n got %+v\nwant %+v\nbase %+v", got, cur, base)
		}

		// Encode picks the shorter form and Decode undoes it.
		w.Reset(nil)
		cur.Encode(&w, &base)
		if w.Len() != 1+min(cur.FullBits(), cur.DeltaBits(&base)) {
			t.Fatalf("Encode wrote %d bits; full %d, delta %d", w.Len(), cur.FullBits(), cur.DeltaBits(&base))
		}
		if cur.DeltaBits(&base) < cur.FullBits() {
			smaller++
		}
		got = Sample{Secret: "local only"}
		if err := got.Decode(codec.NewReader(w.Bytes()), &base); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, cur) {
			t.Fatalf("Encode/Decode:\n got %+v\nwant %+v", got, cur)
		}
	}
	if smaller < 4000 {
		t.Fatalf("delta was shorter for only %d of 5000 small changes", smaller)
	}
}

func TestDeltaWithoutBaseline(t *testing.T) {
	base := Sample{X: 10}
	cur := Sample{X: 11}
	var w codec.Writer
	cur.Encode(&w, &base)
	got := Sample{Name: "untouched"}
	err := got.Decode(codec.NewReader(w.Bytes()), nil)
	if !errors.Is(err, codec.ErrNoBaseline) {
		t.Fatalf("err = %v, want ErrNoBaseline", err)
	}
	if got.Name != "untouched" {
		t.Fatal("a failed decode changed the record")
	}
}

func TestDecodeDoesNotAliasBaseline(t *testing.T) {
	base := Sample{Blob: []byte{1, 2, 3}}
	cur := Sample{Blob: []byte{9, 9, 9, 9}}
	var w codec.Writer
	cur.EncodeDelta(&w, &base)
	var got Sample
	if err := got.DecodeDelta(codec.NewReader(w.Bytes()), &base); err != nil {
		t.Fatal(err)
	}
	got.Blob[0] = 7
	if base.Blob[0] != 1 {
		t.Fatal("decoding a delta wrote into the baseline's slice")
	}
}

func TestEncodeOutOfRange(t *testing.T) {
	tests := []struct {
		name string
		s    Sample
	}{
		{"uint over max", Sample{Mode: 6}},
		{"opt uint over max", Sample{Level: 100}},
		{"relative offset over range", Sample{X: 0, TargetX: 301}},
		{"quantized over range", Sample{Heading: 361}},
		{"string too long", Sample{Name: "abcdefghijklmnopqrstuvwxyz"}},
		{"nan quantized", Sample{Heading: float32(math.NaN())}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w codec.Writer
			tt.s.EncodeFull(&w)
			if !errors.Is(w.Err(), codec.ErrOutOfRange) && !errors.Is(w.Err(), codec.ErrTooLong) {
				t.Fatalf("err = %v, want out of range or too long", w.Err())
			}
			// The stream stays well-formed: it decodes, with the value clamped.
			var got Sample
			if err := got.DecodeFull(codec.NewReader(w.Bytes())); err != nil {
				t.Fatalf("clamped stream does not decode: %v", err)
			}
		})
	}
}

func TestDecodeHostile(t *testing.T) {
	valid := randSample(rand.New(rand.NewPCG(5, 6)))
	var w codec.Writer
	valid.EncodeFull(&w)
	full := append([]byte(nil), w.Bytes()...)
	for cut := 0; cut < len(full)-1; cut++ {
		var got Sample
		if err := got.DecodeFull(codec.NewReader(full[:cut])); !errors.Is(err, codec.ErrTruncated) {
			t.Fatalf("cut to %d bytes: err = %v, want ErrTruncated", cut, err)
		}
	}
	// Mode is the second field: bits 1-3. 7 is over its max of 5.
	bad := append([]byte(nil), full...)
	bad[0] |= 7 << 1
	var got Sample
	err := got.DecodeFull(codec.NewReader(bad))
	if !errors.Is(err, codec.ErrOutOfRange) {
		t.Fatalf("err = %v, want ErrOutOfRange", err)
	}
	if want := "Sample.Mode"; err == nil || !contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestWideRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		base := Wide{Big: rng.Uint64(), Small: int64(rng.Uint64()), Flag: rng.IntN(2) == 1}
		cur := base
		switch rng.IntN(3) {
		case 0:
			cur.Big += uint64(rng.IntN(4000)) - 2000
		case 1:
			cur.Big = rng.Uint64()
		case 2:
			cur.Small = int64(rng.Uint64())
		}
		var w codec.Writer
		cur.EncodeFull(&w)
		var got Wide
		if err := got.DecodeFull(codec.NewReader(w.Bytes())); err != nil || got != cur {
			t.Fatalf("full: got %+v, %v; want %+v", got, err, cur)
		}
		w.Reset(nil)
		cur.EncodeDelta(&w, &base)
		if cur.DeltaBits(&base) != w.Len() {
			t.Fatalf("DeltaBits %d, wrote %d", cur.DeltaBits(&base), w.Len())
		}
		if err := got.DecodeDelta(codec.NewReader(w.Bytes()), &base); err != nil || got != cur {
			t.Fatalf("delta: got %+v, %v; want %+v", got, err, cur)
		}
	}
}

// FuzzSampleDecode feeds arbitrary bytes to every decoder of the record:
// none may panic, a failed decode leaves the record unchanged, and anything
// that decodes re-encodes to a record that decodes to the same value.
func FuzzSampleDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 8 {
		base := randSample(rng)
		cur := mutate(rng, base)
		var w codec.Writer
		cur.EncodeFull(&w)
		f.Add(append([]byte(nil), w.Bytes()...))
		w.Reset(nil)
		cur.EncodeDelta(&w, &base)
		f.Add(append([]byte(nil), w.Bytes()...))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	base := randSample(rand.New(rand.NewPCG(11, 12)))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, delta := range []bool{false, true} {
			got := base
			var err error
			if delta {
				err = got.DecodeDelta(codec.NewReader(data), &base)
			} else {
				err = got.DecodeFull(codec.NewReader(data))
			}
			if err != nil {
				if !reflect.DeepEqual(got, base) {
					t.Fatalf("failed decode changed the record: %v", err)
				}
				continue
			}
			var w codec.Writer
			got.EncodeFull(&w)
			if w.Err() != nil {
				t.Fatalf("a decoded record does not re-encode: %v", w.Err())
			}
			again := base
			if err := again.DecodeFull(codec.NewReader(w.Bytes())); err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("re-encoded record decodes to %+v, %v; want %+v", again, err, got)
			}
		}
	})
}
