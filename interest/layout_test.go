package interest

import (
	"fmt"
	"hash/maphash"
	"testing"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/codec"
)

// TestEntityLayout checks what the entity's field order is for: the
// fields every frame's loops read share its first cache line, and a slab
// of entities keeps each to whole cache lines.
func TestEntityLayout(t *testing.T) {
	var e entity
	if got := unsafe.Sizeof(e); got != entitySize || entitySize%64 != 0 {
		t.Fatalf("entity is %d bytes, want entitySize %d, a multiple of 64", got, entitySize)
	}
	for name, off := range map[string]uintptr{
		"reg":     unsafe.Offsetof(e.reg),
		"lg":      unsafe.Offsetof(e.lg) + unsafe.Sizeof(e.lg) - 1,
		"start":   unsafe.Offsetof(e.start),
		"lastSyn": unsafe.Offsetof(e.lastSyn) + unsafe.Sizeof(e.lastSyn) - 1,
	} {
		if off >= 64 {
			t.Errorf("%s ends at byte %d, past the first cache line", name, off)
		}
	}
	if n := entitySize * entitySlab; n <= 32<<10 {
		t.Errorf("a slab of %d bytes is a small object, not page-aligned", n)
	}
}

// TestObserverLayout checks that what every frame's send reads of an
// observer, and begin of one with a packet to build, lies in the lines
// observer.prefetch loads.
func TestObserverLayout(t *testing.T) {
	var o observer
	for name, end := range map[string]uintptr{
		"heard":   unsafe.Offsetof(o.heard),
		"seq":     unsafe.Offsetof(o.seq) + unsafe.Sizeof(o.seq),
		"queue":   unsafe.Offsetof(o.queue) + unsafe.Sizeof(o.queue),
		"hist":    unsafe.Offsetof(o.hist) + unsafe.Sizeof(o.hist),
		"pkt":     unsafe.Offsetof(o.pkt) + unsafe.Sizeof(o.pkt),
		"settled": unsafe.Offsetof(o.settled) + unsafe.Sizeof(o.settled),
		"later":   unsafe.Offsetof(o.later) + unsafe.Sizeof(o.later),
	} {
		if end > observerLines*64 {
			t.Errorf("observer.%s ends at byte %d, past the %d lines prefetched", name, end, observerLines)
		}
	}
}

// TestEntityAddr checks the address ent and prefetchEntity work out from
// the slabs, over several slabs and a reused ID (which keeps its storage),
// and that IDs with no storage have none.
func TestEntityAddr(t *testing.T) {
	w, err := NewWorld(Config{}, time.Unix(0, 0), discard{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2*entitySlab + 3 {
		if _, err := w.Spawn(NPC, Logic{Pos: Vec{int32(i), 5}}, Display{}); err != nil {
			t.Fatal(err)
		}
	}
	before := w.get(300)
	if err := w.Despawn(300); err != nil {
		t.Fatal(err)
	}
	if id, err := w.Spawn(Player, Logic{}, Display{}); err != nil || id != 300 {
		t.Fatalf("respawn: ID %d, %v; want the freed 300", id, err)
	}
	if e := w.get(300); e != before || e.kind != Player {
		t.Fatalf("respawned 300 at %p (kind %v), was at %p", e, e.kind, before)
	}
	if w.ids != 2*entitySlab+4 {
		t.Fatalf("%d IDs handed out, want %d", w.ids-1, 2*entitySlab+3)
	}
	for id := 1; id < w.ids; id++ {
		e := w.ent(ID(id))
		if e.id != ID(id) || !e.alive {
			t.Fatalf("entity %d: storage holds entity %d (alive %v)", id, e.id, e.alive)
		}
		if id%entitySlab != 1 && uintptr(unsafe.Pointer(e))-uintptr(unsafe.Pointer(w.ent(ID(id-1)))) != entitySize {
			t.Fatalf("entity %d is not next to %d in its slab", id, id-1)
		}
	}
	for _, id := range []ID{0, ID(3*entitySlab + 1), ID(1 << 20)} {
		if p := w.entityAddr(id); p != nil {
			t.Errorf("entity %d, never stored: address %p", id, p)
		}
		w.prefetchEntity(id, 0, 4) // ignored
	}
}

// TestEncodingsInline checks that the default configuration's largest
// logic encodings, region-relative and absolute, stay in the entity's own
// buffers, in the cache lines that hold their headers.
func TestEncodingsInline(t *testing.T) {
	w, err := NewWorld(Config{}, time.Unix(0, 0), discard{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := w.Config()
	edge := int32(cfg.Width*cfg.RegionSize) - 1
	far := edge - int32(cfg.MaxMove)
	lg := Logic{Pos: Vec{edge, edge}, Dest: Vec{far, far}, Speed: int32(cfg.MaxSpeed), State: 31, Combat: true,
		Life: 7, Mana: 99, Rage: 33, Magic: uint32(1<<min(cfg.MagicBits, 32) - 1)}
	var ids []ID
	for range 300 { // past a slab, and through a reused ID
		id, err := w.Spawn(NPC, lg, Display{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := w.Despawn(ids[7]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Spawn(Player, lg, Display{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []ID{ids[0], ids[7], ids[299]} {
		e := w.ent(id)
		w.relative(e)
		w.absolute(e)
		if unsafe.SliceData(e.rel.b) != &e.relBuf[0] || unsafe.SliceData(e.abs.b) != &e.absBuf[0] {
			t.Errorf("entity %d: encodings of %d and %d bits left the entity", id, e.rel.n, e.abs.n)
		}
	}
	var e entity
	for name, r := range map[string][2]uintptr{
		"rel": {unsafe.Offsetof(e.relFrame), unsafe.Offsetof(e.relBuf) + encInline - 1},
		"abs": {unsafe.Offsetof(e.absFrame), unsafe.Offsetof(e.absBuf) + encInline - 1},
	} {
		if r[0]/64 != r[1]/64 {
			t.Errorf("%s encoding spans bytes %d-%d, more than one cache line", name, r[0], r[1])
		}
	}
}

// TestNameIndex checks the world's side of the name dictionary
// against a map: every name sent in full gets the next index until the
// dictionary is full, and a name sent again is found under its index.
func TestNameIndex(t *testing.T) {
	var n names
	ref := map[string]int{}
	var w codec.Writer
	for i := range 3 * maxNames {
		name := fmt.Sprintf("n%d", i*7919%(2*maxNames)) // repeats, and more names than fit
		if i%5 == 0 {
			name = ""
		}
		h := maphash.String(nameSeed, name)
		want, ok := ref[name]
		if !ok {
			want = -1
		}
		if got := n.find(name, h); got != want {
			t.Fatalf("step %d: find(%q) = %d, want %d", i, name, got, want)
		}
		w.Reset(nil)
		n.writeName(&w, name, true)
		if !ok && name != "" && len(ref) < maxNames {
			ref[name] = len(ref)
		}
	}
	if len(n.list) != maxNames || len(ref) != maxNames {
		t.Errorf("dictionary holds %d names, reference %d, want %d", len(n.list), len(ref), maxNames)
	}
	for name, i := range ref {
		if got := n.find(name, maphash.String(nameSeed, name)); got != i || n.list[i] != name {
			t.Errorf("%q: index %d, want %d", name, got, i)
		}
	}
}

// TestLookDict checks the world's side of the look dictionary against a
// map: indexes in the order inserted, every look found after the table
// grows, absent ones not.
func TestLookDict(t *testing.T) {
	var d lookDict
	ref := map[uint32]int{}
	for i := range 3 * maxLooks {
		id := uint32(i*7919%(2*maxLooks)) + 1 // repeats, in no order
		want, ok := ref[id]
		if !ok {
			want = -1
		}
		if got := d.find(id); got != want {
			t.Fatalf("step %d: find(%d) = %d, want %d", i, id, got, want)
		}
		if !ok && d.len() < maxLooks {
			ref[id] = d.len()
			d.insert(id)
		}
	}
	for id, i := range ref {
		if got := d.find(id); got != i {
			t.Errorf("look %d: index %d, want %d", id, got, i)
		}
	}
	if d.len() != maxLooks {
		t.Errorf("holds %d looks, want %d", d.len(), maxLooks)
	}
}
