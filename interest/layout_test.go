package interest

import (
	"testing"
	"unsafe"
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
		"reg":    unsafe.Offsetof(e.reg),
		"lg":     unsafe.Offsetof(e.lg) + unsafe.Sizeof(e.lg) - 1,
		"start":  unsafe.Offsetof(e.start),
		"lastBc": unsafe.Offsetof(e.lastBc) + unsafe.Sizeof(e.lastBc) - 1,
	} {
		if off >= 64 {
			t.Errorf("%s ends at byte %d, past the first cache line", name, off)
		}
	}
	if n := entitySize * entitySlab; n <= 32<<10 {
		t.Errorf("a slab of %d bytes is a small object, not page-aligned", n)
	}
}
