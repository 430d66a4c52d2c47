//go:build linux

package hugepage

import (
	"errors"
	"slices"
	"testing"
)

func TestParseMapping(t *testing.T) {
	for _, tc := range []struct {
		line string
		want mapping
		ok   bool
	}{
		{"c0000000-c4000000 rw-p 00000000 00:00 0 ", mapping{0xc0000000, 0xc4000000, true, true}, true},
		{"c4000000-c8000000 ---p 00000000 00:00 0", mapping{0xc4000000, 0xc8000000, false, true}, true},
		{"7f00-8f00 rw-p 00000000 00:00 0   [anon: Go: heap]", mapping{0x7f00, 0x8f00, true, true}, true},
		{"38ae9000-38b0a000 rw-p 00000000 00:00 0  [heap]", mapping{0x38ae9000, 0x38b0a000, true, false}, true},
		{"00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus-daemon", mapping{0x400000, 0x452000, false, false}, true},
		{"7fff-8fff rw-s 00000000 00:05 123 /dev/zero", mapping{0x7fff, 0x8fff, true, false}, true},
		{"", mapping{}, false},
		{"zz-10 rw-p 0 00:00 0", mapping{}, false},
		{"20-10 rw-p 0 00:00 0", mapping{}, false},
		{"10 rw-p 0 00:00 0", mapping{}, false},
		{"10-20 rw 0 00:00 0", mapping{}, false},
		{"1-10000000000000000 rw-p 0 00:00 0", mapping{}, false}, // wider than a uintptr
	} {
		got, ok := parseMapping([]byte(tc.line))
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseMapping(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHeapMappings(t *testing.T) {
	maps := []mapping{
		{0x1000, 0x2000, true, false}, // a file
		{0x2000, 0x3000, false, true}, // reserved, adjacent to the file
		{0x5000, 0x6000, false, true}, // reserved
		{0x6000, 0x9000, true, true},  // in use: holds the probe
		{0x9000, 0xa000, false, true}, // reserved
		{0xb000, 0xc000, true, true},  // a gap before it: another mapping
		{0xc000, 0xd000, true, false}, // named
	}
	got := heapMappings(maps, 0x7000)
	if len(got) != 3 || got[0].start != 0x5000 || got[2].end != 0xa000 {
		t.Errorf("heapMappings = %+v, want the three from 0x5000 to 0xa000", got)
	}
	if got := heapMappings(maps, 0x1800); got != nil {
		t.Errorf("heapMappings of a file's address = %+v, want none", got)
	}
	if got := heapMappings(maps, 0x4000); got != nil {
		t.Errorf("heapMappings of an unmapped address = %+v, want none", got)
	}
}

// FuzzParseMapping is for catching panics on lines the kernel would not
// write; of what parseMapping accepts, it checks that start < end holds.
func FuzzParseMapping(f *testing.F) {
	f.Add([]byte("c000000000-c004000000 rw-p 00000000 00:00 0"))
	f.Add([]byte("7f00-8f00 rw-p 00000000 00:00 0   [anon: Go: heap]"))
	f.Add([]byte("1-"))
	f.Fuzz(func(t *testing.T, line []byte) {
		if m, ok := parseMapping(line); ok && m.start >= m.end {
			t.Fatalf("parseMapping(%q) = %+v: empty range accepted", line, m)
		}
	})
}

// TestAdvise advises this test's own heap: mappings are found and advised,
// and a second call advises only what the heap added since (collapsing is
// up to the kernel: Report.Huge).
func TestAdvise(t *testing.T) {
	var a Advisor
	rep, err := a.Advise()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("Advise: %v", err)
	}
	if rep.Mode == "" || rep.Advised <= 0 || len(a.done) == 0 {
		t.Fatalf("Advise = %+v, want the mode and the heap's bytes advised", rep)
	}
	t.Logf("mode %q: %d bytes advised, %d on huge pages", rep.Mode, rep.Advised, rep.Huge)
	again, err := a.Advise()
	if err != nil {
		t.Fatalf("Advise again: %v", err)
	}
	if again.Advised >= rep.Advised {
		t.Errorf("the second call advised %d bytes, the first %d: want only what the heap added", again.Advised, rep.Advised)
	}
}

func TestSpans(t *testing.T) {
	var a Advisor
	for _, s := range []span{{10, 20}, {30, 40}, {20, 25}, {50, 60}, {5, 8}} {
		a.add(s)
	}
	if want := []span{{5, 8}, {10, 25}, {30, 40}, {50, 60}}; !slices.Equal(a.done, want) {
		t.Fatalf("advised %v, want %v", a.done, want)
	}
	for _, tc := range []struct {
		s    span
		want []span
	}{
		{span{0, 5}, []span{{0, 5}}},
		{span{0, 100}, []span{{0, 5}, {8, 10}, {25, 30}, {40, 50}, {60, 100}}},
		{span{12, 18}, nil},
		{span{22, 33}, []span{{25, 30}}},
		{span{60, 70}, []span{{60, 70}}},
		{span{55, 70}, []span{{60, 70}}},
	} {
		if got := a.uncovered(tc.s); !slices.Equal(got, tc.want) {
			t.Errorf("uncovered(%v) = %v, want %v", tc.s, got, tc.want)
		}
	}
	a.add(span{8, 50})
	if want := []span{{5, 60}}; !slices.Equal(a.done, want) {
		t.Fatalf("after filling the gaps: %v, want %v", a.done, want)
	}
}

func TestThpDisabled(t *testing.T) {
	for in, want := range map[string]bool{
		"":                           false,
		"disablethp=1":               true,
		"gctrace=1,disablethp=1":     true,
		"disablethp=1,disablethp=0":  false,
		"disablethp=0":               false,
		"xdisablethp=1":              false,
		"madvdontneed=1,disablethp=": false,
	} {
		if got := thpDisabled(in); got != want {
			t.Errorf("thpDisabled(%q) = %v, want %v", in, got, want)
		}
	}
}
