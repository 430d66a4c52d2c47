package codecbench

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/tongbu/tongbu/codec"
)

// SeedCharacter is the seed's character record laid out byte-aligned, as a
// C struct without bit fields would be, for the encoding/binary baseline.
type SeedCharacter struct {
	ID           uint32
	X, Y         uint16
	Velocity     uint8
	Doing        uint8
	DestX, DestY int16
	Life         uint8
	Mana         uint8
	Rage         uint8
	Magic        uint8
}

// JSONCharacter is the same record with JSON names, for the encoding/json
// baseline.
type JSONCharacter struct {
	ID       uint32 `json:"id"`
	X        uint16 `json:"x"`
	Y        uint16 `json:"y"`
	Velocity uint8  `json:"v"`
	State    uint8  `json:"s"`
	DestX    int16  `json:"dx"`
	DestY    int16  `json:"dy"`
	Life     uint8  `json:"life"`
	Mana     uint8  `json:"mana"`
	Rage     uint8  `json:"rage"`
	Magic    uint8  `json:"magic"`
}

func seedOf(u Update) SeedCharacter {
	return SeedCharacter{
		ID: uint32(u.ID), X: u.X, Y: u.Y, Velocity: u.Velocity, Doing: u.State,
		DestX: int16(int(u.DestX) - int(u.X)), DestY: int16(int(u.DestY) - int(u.Y)),
		Life: u.Life, Mana: u.Mana, Rage: u.Rage, Magic: u.Magic,
	}
}

func jsonOf(u Update) JSONCharacter {
	s := seedOf(u)
	return JSONCharacter{s.ID, s.X, s.Y, s.Velocity, s.Doing, s.DestX, s.DestY, s.Life, s.Mana, s.Rage, s.Magic}
}

// Case is one measured encoding: a name, its size in bits, and benchmark
// bodies for encoding and decoding it.
type Case struct {
	Name   string
	Bits   int
	Encode func(b *testing.B)
	Decode func(b *testing.B)
}

// Cases returns the measured encodings: tongbu's full record (standing and
// moving), tongbu's delta of a moving character, and the two baselines.
func Cases() []Case {
	return []Case{
		fullCase("tongbu full, standing", Standing),
		fullCase("tongbu full, moving", Moving),
		deltaCase(),
		binaryCase(),
		jsonCase(),
	}
}

func fullCase(name string, u Update) Case {
	var w codec.Writer
	u.EncodeFull(&w)
	wire := append([]byte(nil), w.Bytes()...)
	return Case{
		Name: name,
		Bits: w.Len(),
		Encode: func(b *testing.B) {
			buf := make([]byte, 0, 64)
			var w codec.Writer
			b.ReportAllocs()
			for b.Loop() {
				w.Reset(buf)
				u.EncodeFull(&w)
			}
			b.ReportMetric(float64(w.Len()), "bits/op")
		},
		Decode: func(b *testing.B) {
			var r codec.Reader
			var got Update
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(wire)
				if err := got.DecodeFull(&r); err != nil {
					b.Fatal(err)
				}
			}
			if got != u {
				b.Fatalf("decoded %+v, want %+v", got, u)
			}
			b.ReportMetric(float64(len(wire)*8), "bits/op")
		},
	}
}

func deltaCase() Case {
	base, cur := Moving.Character, MovedOneFrame
	var w codec.Writer
	cur.EncodeDelta(&w, &base)
	wire := append([]byte(nil), w.Bytes()...)
	lookup := func(uint16) *Character { return &base }
	return Case{
		Name: "tongbu delta, moving",
		Bits: w.Len(),
		Encode: func(b *testing.B) {
			buf := make([]byte, 0, 64)
			var w codec.Writer
			b.ReportAllocs()
			for b.Loop() {
				w.Reset(buf)
				cur.EncodeDelta(&w, &base)
			}
			b.ReportMetric(float64(w.Len()), "bits/op")
		},
		Decode: func(b *testing.B) {
			var r codec.Reader
			var got Update
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(wire)
				if err := got.DecodeDelta(&r, lookup); err != nil {
					b.Fatal(err)
				}
			}
			if got != cur {
				b.Fatalf("decoded %+v, want %+v", got, cur)
			}
			b.ReportMetric(float64(len(wire)*8), "bits/op")
		},
	}
}

func binaryCase() Case {
	s := seedOf(Moving)
	wire, err := binary.Append(nil, binary.LittleEndian, &s)
	if err != nil {
		panic(err) // a fixed-size struct always encodes
	}
	return Case{
		Name: "encoding/binary (byte-aligned seed struct)",
		Bits: len(wire) * 8,
		Encode: func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = binary.Append(buf[:0], binary.LittleEndian, &s)
			}
			b.ReportMetric(float64(len(buf)*8), "bits/op")
		},
		Decode: func(b *testing.B) {
			var got SeedCharacter
			b.ReportAllocs()
			for b.Loop() {
				if _, err := binary.Decode(wire, binary.LittleEndian, &got); err != nil {
					b.Fatal(err)
				}
			}
			if got != s {
				b.Fatalf("decoded %+v, want %+v", got, s)
			}
			b.ReportMetric(float64(len(wire)*8), "bits/op")
		},
	}
}

func jsonCase() Case {
	j := jsonOf(Moving)
	wire, err := json.Marshal(&j)
	if err != nil {
		panic(err) // a struct of integers always marshals
	}
	return Case{
		Name: "encoding/json",
		Bits: len(wire) * 8,
		Encode: func(b *testing.B) {
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				out, _ = json.Marshal(&j)
			}
			b.ReportMetric(float64(len(out)*8), "bits/op")
		},
		Decode: func(b *testing.B) {
			var got JSONCharacter
			b.ReportAllocs()
			for b.Loop() {
				if err := json.Unmarshal(wire, &got); err != nil {
					b.Fatal(err)
				}
			}
			if got != j {
				b.Fatalf("decoded %+v, want %+v", got, j)
			}
			b.ReportMetric(float64(len(wire)*8), "bits/op")
		},
	}
}
