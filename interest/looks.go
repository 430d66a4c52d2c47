package interest

// dispCache is an entity's display data and its look, kept beside the
// entities, not in them, to keep what every frame's loops read small.
type dispCache struct {
	d    Display
	lk   *look
	look uint32 // lk.id, read here to prefetch a connection's dictionary slot before lk arrives
}

// look is a distinct Display in the world, shared by every entity that
// looks the same (every wolf of a template): connections' look
// dictionaries refer to it by id.
type look struct {
	id     uint32
	refs   int  // entities with this look now
	shared bool // two entities or more have had it at once: connections keep it
	listed bool // on World.dormant; dormant (shared, with no entity) while refs is 0
}

// maxDormantLooks bounds the shared looks the world remembers with no
// entity left (a pack all killed, to rise again): they keep their ids,
// which the connections' dictionaries hold. Past the bound, all of them
// are forgotten at once.
const maxDormantLooks = 4096

// dispEnc returns the display cache of entity id.
func (w *World) dispEnc(id ID) *dispCache {
	for int(id) >= len(w.disps) {
		w.disps = append(w.disps, dispCache{})
	}
	return &w.disps[id]
}

// setDisplay gives entity id display d, counting its look's users. The
// new look is taken before the old one is let go, so that a purge the
// letting go sets off keeps it; an entity given the display it has keeps
// its look as it is.
func (w *World) setDisplay(id ID, d Display) {
	dc := w.dispEnc(id)
	if dc.lk != nil && dc.d == d {
		return
	}
	lk := w.looks[d]
	if lk == nil {
		if w.looks == nil {
			w.looks = make(map[Display]*look)
		}
		w.nextLook++
		lk = &look{id: w.nextLook}
		w.looks[d] = lk
	}
	if lk.refs++; lk.refs > 1 {
		lk.shared = true
	}
	// A dormant look taken again stays on World.dormant until the next
	// purge, which keeps it: it has an entity.
	w.dropLook(dc)
	dc.d, dc.lk, dc.look = d, lk, lk.id
}

// dropLook releases an entity's look. A look no entity has any more is
// forgotten, unless it was shared: that one stays, dormant, so that its
// entities coming back (a respawn) keep the id the connections hold.
func (w *World) dropLook(dc *dispCache) {
	if dc.lk == nil {
		return
	}
	lk := dc.lk
	if lk.refs--; lk.refs == 0 {
		if !lk.shared {
			delete(w.looks, dc.d)
		} else if !lk.listed {
			lk.listed = true
			if w.dormant = append(w.dormant, dc.d); len(w.dormant) > maxDormantLooks {
				w.purgeDormant()
			}
		}
	}
	dc.lk = nil
}

// purgeDormant forgets the dormant looks: those on World.dormant with no
// entity. It also names the looks that have had entities again since they
// were listed, which stay.
func (w *World) purgeDormant() {
	for _, d := range w.dormant {
		lk := w.looks[d]
		if lk.listed = false; lk.refs == 0 {
			delete(w.looks, d)
		}
	}
	clear(w.dormant)
	w.dormant = w.dormant[:0]
}
