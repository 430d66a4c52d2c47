//go:build linux

package hugepage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

const (
	madvHugepage = 14 // MADV_HUGEPAGE
	madvCollapse = 25 // MADV_COLLAPSE (Linux 6.1)

	thpEnabled = "/sys/kernel/mm/transparent_hugepage/enabled"
	thpSize    = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"

	// probeSize is over the largest variable the compiler puts on the
	// stack, so the probe is on the heap.
	probeSize = 128 << 10

	uintptrBits = 32 << (^uintptr(0) >> 63)
)

func (a *Advisor) advise() (Report, error) {
	rep := Report{Huge: -1}
	if thpDisabled(os.Getenv("GODEBUG")) {
		return rep, fmt.Errorf("%w: GODEBUG has disablethp=1", ErrUnsupported)
	}
	mode, err := os.ReadFile(thpEnabled)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if err != nil {
		return rep, err
	}
	rep.Mode = string(bytes.TrimSpace(mode))
	if strings.Contains(rep.Mode, "[never]") {
		return rep, fmt.Errorf("%w: the system's mode is %q", ErrUnsupported, rep.Mode)
	}
	huge := hugePageSize()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return rep, err
	}
	maps, err := parseMaps(f)
	f.Close()
	if err != nil {
		return rep, fmt.Errorf("hugepage: reading /proc/self/maps: %w", err)
	}
	probe := make([]byte, probeSize)
	heap := heapMappings(maps, uintptr(unsafe.Pointer(&probe[0])))
	runtime.KeepAlive(probe)
	if heap == nil {
		return rep, errors.New("hugepage: no mapping holds the heap's probe")
	}
	for _, m := range heap {
		if !m.rw {
			continue
		}
		for _, s := range a.uncovered(span{m.start, m.end}) {
			n := s.end - s.start
			if err := madvise(s.start, n, madvHugepage); err != nil {
				return rep, fmt.Errorf("hugepage: MADV_HUGEPAGE on %#x-%#x: %w", s.start, s.end, err)
			}
			// Collapse what is there, a huge page at a time: a range at
			// once stops at the first that fails (unpopulated, or one the
			// kernel will not move), and an older kernel has no
			// MADV_COLLAPSE. It is best effort: Report.Huge says what it
			// gave.
			for p := (s.start + huge - 1) &^ (huge - 1); p+huge <= s.end; p += huge {
				_ = madvise(p, huge, madvCollapse)
			}
			a.add(s)
			rep.Advised += int64(n)
		}
	}
	if rep.Advised > 0 {
		rep.Huge = anonHuge() // reading it walks the page tables: only after advising something
	}
	return rep, nil
}

// thpDisabled reports whether godebug (GODEBUG's value) sets disablethp=1;
// the last setting of a key counts, as in the runtime.
func thpDisabled(godebug string) bool {
	off := false
	for kv := range strings.SplitSeq(godebug, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "disablethp" {
			off = v == "1"
		}
	}
	return off
}

// hugePageSize returns the size of the system's transparent huge pages (2
// MiB on x86-64 and on arm64 with 4 KiB pages), read once: it is fixed at
// boot. A value that is not a power of two from a page to 1 GiB is not
// believed: the collapse loop makes one call per huge page.
var hugePageSize = sync.OnceValue(func() uintptr {
	b, err := os.ReadFile(thpSize)
	if err == nil {
		n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
		if err == nil && n&(n-1) == 0 && n >= uint64(os.Getpagesize()) && n <= 1<<30 {
			return uintptr(n)
		}
	}
	return 2 << 20
})

// uncovered returns the parts of s that no advised range covers.
func (a *Advisor) uncovered(s span) []span {
	var out []span
	for _, d := range a.done {
		if d.end <= s.start {
			continue
		}
		if d.start >= s.end {
			break
		}
		if d.start > s.start {
			out = append(out, span{s.start, d.start})
		}
		s.start = max(s.start, d.end)
		if s.start >= s.end {
			return out
		}
	}
	return append(out, s)
}

// add records s as advised, merging it with the ranges it touches.
func (a *Advisor) add(s span) {
	i := 0
	for i < len(a.done) && a.done[i].end < s.start {
		i++
	}
	j := i
	for j < len(a.done) && a.done[j].start <= s.end {
		s.start, s.end = min(s.start, a.done[j].start), max(s.end, a.done[j].end)
		j++
	}
	a.done = slices.Replace(a.done, i, j, s)
}

func madvise(p, n uintptr, advice int) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, p, n, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// mapping is a line of /proc/self/maps.
type mapping struct {
	start, end uintptr
	rw         bool // readable and writable: in use (the heap reserves address space as inaccessible)
	anon       bool // private and anonymous
}

// parseMaps reads the lines of /proc/self/maps, skipping those it cannot
// parse.
func parseMaps(f *os.File) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := parseMapping(sc.Bytes()); ok {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// parseMapping parses "start-end perms offset dev inode [path]". It keeps
// nothing of line.
func parseMapping(line []byte) (mapping, bool) {
	fields := bytes.Fields(line)
	if len(fields) < 5 || len(fields[1]) < 4 {
		return mapping{}, false
	}
	lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
	if !ok {
		return mapping{}, false
	}
	// An address wider than a uintptr is rejected, not truncated.
	a, err1 := strconv.ParseUint(string(lo), 16, uintptrBits)
	b, err2 := strconv.ParseUint(string(hi), 16, uintptrBits)
	if err1 != nil || err2 != nil || b <= a {
		return mapping{}, false
	}
	perms := fields[1]
	named := len(fields) > 5 && !bytes.HasPrefix(fields[5], []byte("[anon"))
	return mapping{
		start: uintptr(a), end: uintptr(b),
		rw:   perms[0] == 'r' && perms[1] == 'w',
		anon: perms[3] == 'p' && string(fields[4]) == "0" && !named,
	}, true
}

// heapMappings returns the run of adjacent anonymous mappings around the
// one holding address at: the heap's arenas, in use or reserved. maps is
// sorted by address, as the kernel lists them.
func heapMappings(maps []mapping, at uintptr) []mapping {
	i := 0
	for i < len(maps) && !(maps[i].start <= at && at < maps[i].end) {
		i++
	}
	if i == len(maps) || !maps[i].anon {
		return nil
	}
	lo, hi := i, i
	for lo > 0 && maps[lo-1].anon && maps[lo-1].end == maps[lo].start {
		lo--
	}
	for hi+1 < len(maps) && maps[hi+1].anon && maps[hi+1].start == maps[hi].end {
		hi++
	}
	return maps[lo : hi+1]
}

// anonHuge returns the process's anonymous memory on huge pages in bytes,
// or -1 if the kernel does not say.
func anonHuge() int64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	for l := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(l, []byte("AnonHugePages:")); ok {
			if fields := bytes.Fields(v); len(fields) > 0 {
				if n, err := strconv.ParseInt(string(fields[0]), 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return -1
}
