package interest

import (
	"fmt"
)

// pending is a command waiting for the frame's flush, when it is encoded
// once into the region its entity is in by then.
type pending struct {
	id    ID
	reg   int32 // where the entity was when the command was given
	frame int
	c     command
	tag   int
	// A move's number, and whether it goes on from the entity's previous
	// broadcast path (at speed prev): it is then sent without its source.
	ep   uint8
	cont bool
	prev int32
}

func (w *World) checkLogic(lg *Logic) error {
	if !w.lay.onMap(lg.Pos) || !w.lay.onMap(lg.Dest) {
		return fmt.Errorf("%w: %v -> %v", ErrOffMap, lg.Pos, lg.Dest)
	}
	if lg.Speed < 0 || lg.Speed > int32(w.cfg.MaxSpeed) || lg.State > 31 || lg.Life > 100 || lg.Mana > 100 || lg.Rage > 100 ||
		(w.cfg.MagicBits < 32 && lg.Magic>>w.cfg.MagicBits != 0) {
		return fmt.Errorf("%w: logic field out of range: %+v", ErrConfig, *lg)
	}
	if d := int64(w.cfg.MaxMove); lg.Pos.DistSq(lg.Dest) > 2*d*d {
		return fmt.Errorf("%w: destination %v too far from %v", ErrConfig, lg.Dest, lg.Pos)
	}
	return nil
}

// Spawn adds an entity and announces it to every client in range. An
// entity with Speed 0 stands at Pos whatever Dest says.
func (w *World) Spawn(kind Kind, lg Logic, d Display) (ID, error) {
	if kind >= numKinds {
		return 0, fmt.Errorf("%w: kind %d", ErrConfig, kind)
	}
	if lg.Speed == 0 {
		lg.Dest = lg.Pos // standing: Dest is not needed
	}
	if err := w.checkLogic(&lg); err != nil {
		return 0, err
	}
	if len(d.Name) > MaxName {
		return 0, fmt.Errorf("%w: name over %d bytes", ErrConfig, MaxName)
	}
	id, err := w.allocID()
	if err != nil {
		return 0, err
	}
	w.spawnAt(id, kind, lg, d, false)
	return id, nil
}

// allocID takes an ID for an entity this world spawns: a free one of its
// own, or the next of its own (IDOffset modulo IDStride) past those the
// world has storage for.
func (w *World) allocID() (ID, error) {
	if w.freeAt < len(w.free) {
		id := w.free[w.freeAt]
		w.freeAt++
		if w.freeAt == len(w.free) {
			w.free, w.freeAt = w.free[:0], 0
		}
		return id, nil
	}
	for w.ids < w.cfg.MaxEntities {
		id := ID(w.ids)
		w.grow()
		if w.ownID(id) {
			return id, nil
		}
	}
	return 0, ErrFull
}

// ownID reports whether this world gives out id (IDOffset modulo
// IDStride).
func (w *World) ownID(id ID) bool { return int(id)%w.cfg.IDStride == w.cfg.IDOffset }

// grow adds storage for entity ID w.ids, not alive.
func (w *World) grow() {
	if len(w.slab) == 0 {
		w.slab = make([]entity, entitySlab)
		w.slabs = append(w.slabs, &w.slab[0])
	}
	e := &w.slab[0]
	w.slab = w.slab[1:]
	e.id = ID(w.ids)
	w.ids++
	e.rel.b, e.abs.b = e.relBuf[:0], e.absBuf[:0]
	e.dver = 255 // the first spawn makes it 0
	w.where, w.lastBc, w.waiting, w.ghost = append(w.where, -1), append(w.lastBc, 0), append(w.waiting, false), append(w.ghost, false)
	w.past = append(w.past, pathLog{})
	w.lastCross = append(w.lastCross, noCross)
	w.fields = append(w.fields, nil)
}

// spawnAt makes entity id, which has storage and is not alive, and
// announces it; a ghost mirrors another cell's entity.
func (w *World) spawnAt(id ID, kind Kind, lg Logic, d Display, ghost bool) {
	e := w.ent(id)
	// The move number runs on across a reuse of the ID, so that a client
	// still holding the old entity never takes the new one's moves as its.
	*e = entity{id: id, dver: e.dver + 1, abs: e.abs, rel: e.rel, ep: (e.ep + epochMask/2) & epochMask}
	w.ghost[id] = ghost
	w.lastCross[id] = noCross
	e.kind, e.lg, e.alive = kind, lg, true
	w.past[id] = pathLog{}
	w.past[id].add(pathSeg{w.frame, lg.Pos, lg.Dest, lg.Speed, 0})
	e.bc, e.bcOK = pathSeg{w.frame, lg.Pos, lg.Dest, lg.Speed, 0}, true
	w.setDisplay(e.id, d)
	e.mover, e.dirtyAt, e.absFrame, e.relFrame, e.crossed = -1, -1, -1, -1, -1
	w.lastBc[e.id], e.lastSyn = w.frame, w.frame
	w.setRegion(e, w.regionOfPos(lg.Pos))
	w.addTo(e, e.reg)
	if !lg.Moving() {
		w.announce(e, -1, e.reg)
		return
	}
	// A moving entity is announced with the next frame's crossings, once
	// it (and every observer) has moved: it may cross a region border in
	// its first frame, and an announcement made now would reach the
	// observers of a range it has left.
	w.startMoving(e)
	e.crossed = crossedNew
	w.cross = append(w.cross, e.id)
}

// Despawn removes an entity; clients in range are told.
func (w *World) Despawn(id ID) error {
	e, err := w.owned(id)
	if err != nil {
		return err
	}
	w.despawn(e)
	if w.ownID(id) {
		w.free = append(w.free, id)
	}
	return nil
}

// despawn removes e, owned or a ghost, without freeing its ID.
func (w *World) despawn(e *entity) {
	id := e.id
	if e.obs != nil {
		w.Leave(id)
	}
	if w.carried != nil {
		delete(w.carried, id)
	}
	w.pend = append(w.pend, pending{id: id, reg: e.reg, tag: tagRemove, frame: w.frame})
	w.removeFrom(e, e.reg)
	w.stopMoving(e)
	w.clean(e)
	w.dropLook(w.dispEnc(id))
	e.alive = false
	w.where[id] = -1
	w.ghost[id] = false
	w.fields[id] = nil
}

// Move sends an entity toward dest at speed units per frame, starting now,
// and broadcasts the move to every client in range. It is how the game
// moves NPCs (and players, for knock-backs).
func (w *World) Move(id ID, dest Vec, speed int32) error {
	e, err := w.owned(id)
	if err != nil {
		return err
	}
	lg := e.lg
	lg.Dest, lg.Speed = dest, speed
	if err := w.checkLogic(&lg); err != nil {
		return err
	}
	w.setPath(e, e.lg.Pos, dest, speed, w.frame)
	w.moved(e)
	return nil
}

// Place puts an entity at pos, standing (a teleport, a respawn), and
// broadcasts it.
func (w *World) Place(id ID, pos Vec) error {
	e, err := w.owned(id)
	if err != nil {
		return err
	}
	if !w.lay.onMap(pos) {
		return fmt.Errorf("%w: %v", ErrOffMap, pos)
	}
	w.setPath(e, pos, pos, 0, w.frame)
	w.reregion(e)
	w.moved(e)
	return nil
}

// moved tells a player's client that the game moved its entity: its
// history takes the new path from now, and the client adopts it.
func (w *World) moved(e *entity) {
	if e.obs != nil {
		e.obs.rewriteFrom(w, w.frame, e.lg.Pos, e.lg.Dest, e.lg.Speed)
		e.obs.push(w)
	}
}

// setPath starts e on a path from src at frame f, steps it to the world's
// frame and queues the broadcast.
func (w *World) setPath(e *entity, src, dest Vec, speed int32, f int) {
	e.lg.Pos, e.lg.Dest, e.lg.Speed = src, dest, speed
	// A client that holds the previous path finds src on it, at f: the
	// move needs no source (SPEC.md §8, moves).
	cont := e.bcOK && f >= e.bc.frame && f >= int(e.wholeAt) && StepN(e.bc.pos, e.bc.dest, e.bc.speed, f-e.bc.frame) == src
	prev := e.bc.speed // the speed a client holds of it: none once arrived (a logic message's path)
	if src == e.bc.dest {
		prev = 0
	}
	e.ep = (e.ep + 1) & epochMask
	e.bc, e.bcOK = pathSeg{f, src, dest, speed, 0}, true
	w.pend = append(w.pend, pending{id: e.id, tag: tagMove, frame: f, reg: e.reg,
		c: command{src: src, dest: dest, speed: speed}, ep: e.ep, cont: cont, prev: prev})
	e.lg.Pos = StepN(src, dest, speed, max(w.frame-f, 0))
	w.recordPath(e.id, src, dest, speed, f)
	e.start = f // a move stamped ahead of the world waits at its source
	if e.lg.Moving() {
		w.startMoving(e)
	} else {
		w.stopMoving(e)
	}
	w.invalidate(e)
}

// Jump broadcasts a jump by an entity.
func (w *World) Jump(id ID) error { return w.act(id, pending{tag: tagJump}) }

// Skill broadcasts an entity's use of a skill, with an optional target.
func (w *World) Skill(id ID, skill uint16, target ID) error {
	if target != 0 && w.get(target) == nil {
		return fmt.Errorf("%w: target %d", ErrUnknown, target)
	}
	return w.act(id, pending{tag: tagSkill, c: command{skill: skill, target: target}})
}

// Custom broadcasts a game-defined command: a tag and up to MaxCustom bytes
// the engine does not read.
func (w *World) Custom(id ID, tag uint8, data []byte) error {
	if len(data) > w.cfg.MaxCustom {
		return fmt.Errorf("%w: custom payload of %d bytes", ErrConfig, len(data))
	}
	return w.act(id, pending{tag: tagCustom, c: command{ctag: tag, data: append([]byte(nil), data...)}})
}

func (w *World) act(id ID, p pending) error {
	if _, err := w.owned(id); err != nil {
		return err
	}
	p.id, p.frame = id, w.frame
	w.pend = append(w.pend, p)
	return nil
}

// Update changes an entity's logic data other than its movement (life,
// mana, rage, state, combat, magic): f gets a copy; Pos, Dest and Speed
// changes are ignored (use Move and Place). Clients learn the change by
// state sync, at the policy's rate.
func (w *World) Update(id ID, f func(lg *Logic)) error {
	e, err := w.owned(id)
	if err != nil {
		return err
	}
	lg := e.lg
	f(&lg)
	lg.Pos, lg.Dest, lg.Speed = e.lg.Pos, e.lg.Dest, e.lg.Speed
	if err := w.checkLogic(&lg); err != nil {
		return err
	}
	if lg != e.lg {
		e.lg = lg
		w.invalidate(e)
		w.markDirty(e)
	}
	return nil
}

// SetDisplay changes an entity's display data; clients fetch the new
// version when they next hear of the entity.
func (w *World) SetDisplay(id ID, d Display) error {
	e, err := w.owned(id)
	if err != nil {
		return err
	}
	if len(d.Name) > MaxName {
		return fmt.Errorf("%w: name over %d bytes", ErrConfig, MaxName)
	}
	w.setDisplay(e.id, d)
	e.dver++
	w.invalidate(e)
	w.markDirty(e)
	return nil
}

// SetSpeedLimit sets the fastest a player may move from this frame on, in
// units per frame (1 to Config.MaxSpeed): walking, running, mounted,
// slowed. The world checks every move command against the limit that held
// at the command's frame, kept with the movement history, so
// a command stamped before a slow took effect still passes, and a client
// that claims a faster speed (a speed hack) is corrected.
func (w *World) SetSpeedLimit(player ID, speed int32) error {
	e := w.get(player)
	if e == nil || e.obs == nil {
		return fmt.Errorf("%w: %d", ErrNotObserver, player)
	}
	if speed < 1 || speed > int32(w.cfg.MaxSpeed) {
		return fmt.Errorf("%w: speed limit %d, want 1 to %d", ErrConfig, speed, w.cfg.MaxSpeed)
	}
	e.obs.setLimit(w, speed)
	return nil
}

// SetTarget records player's current target, which the policy may sync
// more often to that player.
func (w *World) SetTarget(player, target ID) error {
	e := w.get(player)
	if e == nil || e.obs == nil {
		return fmt.Errorf("%w: %d", ErrNotObserver, player)
	}
	e.obs.target = target
	return nil
}

// Join attaches a client to an entity (usually a Player): from now on the
// world sends it packets through the Sender under the entity's ID, and
// accepts its uplink through Deliver. A world hosted by engine.Server is
// joined by the server (its WorldConfig.Join hook only spawns or finds
// the entity); a game that drives a World itself calls Spawn, then Join.
func (w *World) Join(id ID) error { return w.join(id, false) }

// JoinInherited joins as Join does the client that follows its entity
// from the next cell of a map and inherited the client of the cell it
// left (Client.Inherit). It goes on in the command sequence that cell
// carried over with the entity: each command the client had in flight
// at the crossing is applied once, by the one cell or the other. (A
// client joined with Join numbers its commands afresh: it was made new,
// or it took the old one's with Client.InheritMoves.) For an entity no
// cell handed over, it is Join.
func (w *World) JoinInherited(id ID) error { return w.join(id, true) }

func (w *World) join(id ID, inherited bool) error {
	e, err := w.owned(id)
	if err != nil {
		return err
	}
	if e.obs != nil {
		return nil
	}
	o := newObserver(w, e)
	if c := w.carried[id]; c != nil { // its client follows it from the next cell
		delete(w.carried, id)
		o.adopt(w, c, inherited)
	}
	e.obs = o
	w.obs = append(w.obs, o)
	w.addObserver(o, e.reg)
	return nil
}

// Leave detaches the client from an entity; the entity stays.
func (w *World) Leave(id ID) {
	e := w.get(id)
	if e == nil || e.obs == nil {
		return
	}
	w.dropObserver(e.obs, e.reg)
	for i, o := range w.obs {
		if o == e.obs {
			w.obs = append(w.obs[:i], w.obs[i+1:]...)
			break
		}
	}
	e.obs = nil
	w.waiting[id] = false
}
