package interest

import (
	"strings"
	"testing"

	"github.com/tongbu/tongbu/codec"
)

// TestLogicRoundTrip encodes logic data with usual and unusual values,
// absolute and region-relative, and decodes it back unchanged; the usual
// values take one bit each.
func TestLogicRoundTrip(t *testing.T) {
	usual := Logic{Pos: Vec{5000, 7000}, Life: 100, Mana: 100}
	tests := []struct {
		name  string
		magic int
		lg    Logic
		dver  uint8
		rel   *Region
	}{
		{"usual", 8, usual, 0, nil},
		{"usual in region", 8, usual, 0, &Region{4, 6}},
		{"hurt, raging, magic, versioned", 8, Logic{Pos: Vec{5000, 7000}, Life: 37, Mana: 0, Rage: 100, Magic: 0xa5, State: 31, Combat: true}, 200, nil},
		{"moving", 8, Logic{Pos: Vec{5000, 7000}, Dest: Vec{1000, 9000}, Speed: 64, Life: 1, Mana: 99, Rage: 1}, 1, &Region{4, 6}},
		{"no magic bits", 0, Logic{Pos: Vec{5000, 7000}, Life: 100, Mana: 100}, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{MagicBits: tt.magic}.WithDefaults()
			if tt.magic == 0 {
				cfg.MagicBits = 0
			}
			l := newLayout(cfg)
			var w codec.Writer
			l.writeLogic(&w, NPC, &tt.lg, tt.dver, tt.rel)
			n := w.Len()
			r := codec.NewReader(w.Bytes())
			var got Logic
			kind, dver := l.readLogic(r, &got, tt.rel)
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			want := tt.lg
			if !want.Moving() {
				want.Dest = want.Pos
				want.Speed = 0
			}
			if kind != NPC || dver != tt.dver || got != want {
				t.Fatalf("got %v %d %+v, want %v %d %+v", kind, dver, got, NPC, tt.dver, want)
			}
			// kind, usual vitals (one bit), version, position, path
			if tt.name == "usual" {
				if want := 2 + 1 + 1 + 2*l.xBits + 1; n != want {
					t.Errorf("usual logic took %d bits, want %d", n, want)
				}
			}
		})
	}
}

// TestDisplayEviction fills a client's display cache past its bound: the
// entries wanted longest ago go first, and those of known entities stay.
func TestDisplayEviction(t *testing.T) {
	c, err := NewClient(Config{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for id := ID(2); id < 2+maxDisplays+10; id++ {
		c.frame = int(id)
		c.displays[id] = cachedDisplay{displayEntry: displayEntry{id: id}, used: c.frame}
	}
	c.ents[2] = &known{}  // the oldest, but known: kept
	c.ents[50] = &known{} // known: kept
	c.evictDisplays(maxDisplays)
	if len(c.displays) != maxDisplays {
		t.Fatalf("%d entries left, want %d", len(c.displays), maxDisplays)
	}
	for _, id := range []ID{2, 50, 13, 2 + maxDisplays + 9} {
		if _, ok := c.displays[id]; !ok {
			t.Errorf("entry %d evicted", id)
		}
	}
	for id := ID(3); id < 13; id++ {
		if _, ok := c.displays[id]; ok {
			t.Errorf("entry %d, among the oldest, kept", id)
		}
	}
}

// TestTagCodes checks the message tags' prefix code: every tag reads
// back, no code is a prefix of another, and zero padding of up to seven
// bits after a message reads as the end while leftovers with a 1 in their
// first four bits do not.
func TestTagCodes(t *testing.T) {
	for tag, code := range tagCodes {
		if code == "" {
			continue
		}
		for other, c := range tagCodes {
			if other != tag && c != "" && strings.HasPrefix(c, code) {
				t.Errorf("code %q of tag %d is a prefix of %q (tag %d)", code, tag, c, other)
			}
		}
		var w codec.Writer
		writeTag(&w, tag)
		if w.Len() != len(code) || tagLen(tag) != len(code) {
			t.Errorf("tag %d: wrote %d bits, tagLen %d, want %d", tag, w.Len(), tagLen(tag), len(code))
		}
		w.WriteBits(0x5a5a, 16) // a body, so the tag is not mistaken for padding
		r := codec.NewReader(w.Bytes())
		if got := readTag(r); got != tag || r.Pos() != len(code) || r.Err() != nil {
			t.Errorf("tag %d read back as %d, taking %d bits (%v)", tag, got, r.Pos(), r.Err())
		}
	}
	// The code is complete: whatever bits follow, one code begins them,
	// and readTag takes exactly its bits.
	for next := 0; next < 1<<maxTagBits; next++ {
		r := codec.NewReader([]byte{byte(next), 0xff}) // the 1s keep it from being padding
		tag := readTag(r)
		code := tagCodes[tag]
		var bits strings.Builder
		for i := range len(code) {
			bits.WriteByte('0' + byte(next>>i&1))
		}
		if r.Err() != nil || bits.String() != code || r.Pos() != len(code) {
			t.Errorf("bits %05b (first lowest) read as tag %d (code %q) taking %d bits (%v)", next, tag, code, r.Pos(), r.Err())
		}
	}
	for pad := 1; pad < 8; pad++ {
		r := codec.NewReader([]byte{0xff, 0})
		r.Skip(16 - pad)
		if got := readTag(r); got != tagEnd {
			t.Errorf("%d bits of padding read as tag %d", pad, got)
		}
		r = codec.NewReader([]byte{0xff, 0x80})
		r.Skip(16 - pad)
		if got := readTag(r); got == tagEnd && pad <= 4 { // five or more start with the end's code
			t.Errorf("%d non-zero leftover bits read as the end", pad)
		}
	}
}
