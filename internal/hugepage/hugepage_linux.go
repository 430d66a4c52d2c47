//go:build linux

package hugepage

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

const (
	madvHugepage = 14 // MADV_HUGEPAGE
	madvCollapse = 25 // MADV_COLLAPSE (Linux 6.1)

	hugeSize = 2 << 20 // a huge page on x86-64 and arm64 (4 KiB base pages)
)

// probe is a heap object: the mappings around its address are the heap's.
var probe = new([1 << 12]byte)

func (a *Advisor) advise() (Report, error) {
	var rep Report
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return rep, err
	}
	rep.Mode = string(bytes.TrimSpace(mode))
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return rep, err
	}
	maps, err := parseMaps(f)
	f.Close()
	if err != nil {
		return rep, err
	}
	heap := heapMappings(maps, uintptr(unsafe.Pointer(probe)))
	if heap == nil {
		return rep, errors.New("hugepage: no mapping holds the heap's probe")
	}
	if a.done == nil {
		a.done = map[span]bool{}
	}
	for _, m := range heap {
		s := span{m.start, m.end}
		if !m.rw || a.done[s] {
			continue
		}
		n := m.end - m.start
		if err := madvise(m.start, n, madvHugepage); err != nil {
			return rep, err
		}
		// Collapse what is there, a huge page at a time: a range at once
		// stops at the first that fails (unpopulated, or one the kernel
		// will not move), and an older kernel has no MADV_COLLAPSE. It is
		// best effort: Report.Huge says what it gave.
		for p := (m.start + hugeSize - 1) &^ (hugeSize - 1); p+hugeSize <= m.end; p += hugeSize {
			_ = madvise(p, hugeSize, madvCollapse)
		}
		a.done[s] = true
		rep.Advised += int64(n)
	}
	rep.Huge = anonHuge()
	return rep, nil
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
		if m, ok := parseMapping(sc.Text()); ok {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// parseMapping parses "start-end perms offset dev inode [path]".
func parseMapping(line string) (mapping, bool) {
	fs := bytes.Fields([]byte(line))
	if len(fs) < 5 || len(fs[1]) < 4 {
		return mapping{}, false
	}
	lo, hi, ok := bytes.Cut(fs[0], []byte("-"))
	if !ok {
		return mapping{}, false
	}
	a, err1 := strconv.ParseUint(string(lo), 16, 64)
	b, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || b <= a {
		return mapping{}, false
	}
	perms := fs[1]
	named := len(fs) > 5 && !bytes.HasPrefix(fs[5], []byte("[anon"))
	return mapping{
		start: uintptr(a), end: uintptr(b),
		rw:   perms[0] == 'r' && perms[1] == 'w',
		anon: perms[3] == 'p' && string(fs[4]) == "0" && !named,
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
			if fs := bytes.Fields(v); len(fs) > 0 {
				if n, err := strconv.ParseInt(string(fs[0]), 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return -1
}
