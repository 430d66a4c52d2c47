package interest

import "github.com/tongbu/tongbu/codec"

// region is one square of the map's grid: the entities in it, the
// observers whose entity is in it, and the frame's messages that the
// observers in range pick up from it.
type region struct {
	ents    []ID
	obs     []*observer
	obsIDs  []ID     // obs's entities, in the same order: read without reading the observers
	bc      msgBuf   // commands of entities here, for every observer within range
	direct  msgBuf   // announcements for observers located here
	syncs   []ID     // entities here due for state sync this frame
	leavers []leaver // observers that left this region lately, oldest first
	waiting int32    // how many of obs wait for a forced sync (World.waiting)
}

// leaver is an observer that left a region, and the frame it did.
type leaver struct {
	o  *observer
	at int
}

// msgBuf collects one frame's messages for a region: the encoded bits, where
// each message ends, and the entity each is about.
type msgBuf struct {
	w    codec.Writer
	buf  []byte
	ends []int32
	ids  []ID
}

func (m *msgBuf) reset() {
	m.buf = m.w.Bytes()[:0] // keep the grown buffer: no allocation per frame
	m.w.Reset(m.buf)
	m.ends, m.ids = m.ends[:0], m.ids[:0]
}

func (m *msgBuf) mark(id ID) {
	m.ends = append(m.ends, int32(m.w.Len()))
	m.ids = append(m.ids, id)
}

func (w *World) regionAt(i int32) Region { return Region{int(i) % w.cfg.Width, int(i) / w.cfg.Width} }

func (w *World) regionIndex(r Region) int32 { return int32(r.Y*w.cfg.Width + r.X) }

func (w *World) regionOfPos(p Vec) int32 { return w.regionIndex(w.lay.regionOf(p)) }

// around calls f for each region of the 3x3 range centred on r.
func (w *World) around(r int32, f func(int32)) {
	c := w.regionAt(r)
	for y := max(c.Y-1, 0); y <= min(c.Y+1, w.cfg.Height-1); y++ {
		for x := max(c.X-1, 0); x <= min(c.X+1, w.cfg.Width-1); x++ {
			f(int32(y*w.cfg.Width + x))
		}
	}
}

// slot returns the index of region r in the 3x3 range centred on c, or -1.
func slotOf(c, r Region) int {
	dx, dy := r.X-c.X, r.Y-c.Y
	if dx < -1 || dx > 1 || dy < -1 || dy > 1 {
		return -1
	}
	return dx + 1 + 3*(dy+1)
}

func (w *World) touch(ri int32) {
	if !w.busy[ri] {
		w.busy[ri] = true
		w.touched = append(w.touched, ri)
	}
}

func (w *World) hasObservers(r int32) bool {
	found := false
	w.around(r, func(ri int32) { found = found || len(w.regions[ri].obs) > 0 })
	return found
}

func (w *World) addTo(e *entity, r int32) {
	reg := &w.regions[r]
	e.slot = int32(len(reg.ents))
	reg.ents = append(reg.ents, e.id)
}

func (w *World) removeFrom(e *entity, r int32) {
	reg := &w.regions[r]
	last := reg.ents[len(reg.ents)-1]
	reg.ents[e.slot] = last
	w.ent(last).slot = e.slot
	reg.ents = reg.ents[:len(reg.ents)-1]
}

// addObserver lists o in region r, where its entity now is.
func (w *World) addObserver(o *observer, r int32) {
	reg := &w.regions[r]
	reg.obs = append(reg.obs, o)
	reg.obsIDs = append(reg.obsIDs, o.id)
	o.listed = r
	if w.waiting[o.id] {
		reg.waiting++
	}
}

// dropObserver takes o off region r's list.
func (w *World) dropObserver(o *observer, r int32) {
	reg := &w.regions[r]
	o.listed = -1
	if w.waiting[o.id] {
		reg.waiting--
	}
	for i, x := range reg.obs {
		if x == o {
			last := len(reg.obs) - 1
			reg.obs[i], reg.obsIDs[i] = reg.obs[last], reg.obsIDs[last]
			reg.obs, reg.obsIDs = reg.obs[:last], reg.obsIDs[:last]
			return
		}
	}
}

func (w *World) moveObserver(o *observer, from, to int32) {
	w.dropObserver(o, from)
	w.addObserver(o, to)
	w.left(o, from)
	o.crossed(w, from, to)
}

// left records that observer o left region from, forgetting the region's
// leavers older than missed looks.
func (w *World) left(o *observer, from int32) {
	reg := &w.regions[from]
	window := w.leaverFrames
	n := 0
	for n < len(reg.leavers) && w.frame-reg.leavers[n].at > window {
		n++
	}
	if n > 0 {
		reg.leavers = append(reg.leavers[:0], reg.leavers[n:]...)
	}
	reg.leavers = append(reg.leavers, leaver{o: o, at: w.frame})
}
