package interest

import "math"

// Lag compensation (the world rewinds a player's moves to the frame
// the client stamped them with; this rewinds the world around an action
// to the frame the player saw). The world keeps every entity's recent
// paths (pathLog: the last pathSegs path changes, at most one a frame),
// written when a path changes and never per frame, so that an action can
// be judged against where its target was on the player's screen.

// recordPath notes that entity id took the path from src toward dest at
// speed from frame f on (setPath): a move stamped in the past rewrites
// what the history held after f; one stamped ahead waits at its source.
func (w *World) recordPath(id ID, src, dest Vec, speed int32, f int) {
	l := &w.past[id]
	if f > w.frame {
		l.set(pathSeg{w.frame, src, src, 0, 0})
		l.add(pathSeg{f, src, dest, speed, 0})
		return
	}
	l.set(pathSeg{f, src, dest, speed, 0})
}

// action returns the Action a player's command c makes, with the frame
// the player viewed when it acted, bounded by Config.MaxRewind: neither
// the view nor the frame the player acted at is ever older than MaxRewind
// before the world's frame, whatever the command's own stamp (the uplink
// takes commands stamped as far back as the player's move history, 10 s
// by default: a cheater's stamp must not buy it a longer rewind).
func (w *World) action(id ID, c *command, kind ActionKind) Action {
	a := Action{Player: id, Frame: c.frame, Kind: kind, View: float64(c.frame) - float64(c.view)/viewSteps}
	if a.View < float64(c.frame) {
		w.stats.Rewinds++
	}
	bound := w.frame - w.rewindFrames
	if a.View < float64(bound) {
		a.View = float64(bound)
		w.stats.RewindLimited++
	}
	a.Frame = max(a.Frame, bound)
	return a
}

// PositionAt returns where entity id was at frame (with its fraction,
// as Action.View has it), within the last Config.History and the last
// changes of path the world keeps of it (16): the position lag
// compensation judges an action against. A frame after the world's is
// taken as the world's. It reports false for an entity that does not
// exist, or a frame before what is kept (the position returned is then
// the oldest kept).
func (w *World) PositionAt(id ID, frame float64) (Vec, bool) {
	e := w.get(id)
	if e == nil {
		return Vec{}, false
	}
	l := &w.past[id]
	if l.n == 0 {
		return e.lg.Pos, true
	}
	frame = min(frame, float64(w.frame))
	f := int(math.Floor(frame))
	first := l.nth(0).frame
	ok := f >= first && f >= w.frame-w.lay.history
	if !ok {
		f, frame = first, float64(first)
	}
	a := l.posAt(f)
	k := frame - float64(f)
	if k == 0 {
		return a, ok
	}
	b := l.posAt(f + 1)
	return Vec{a.X + int32(math.Round(k*float64(b.X-a.X))), a.Y + int32(math.Round(k*float64(b.Y-a.Y)))}, ok
}

// posAt returns the position at whole frame f, at or after the first
// path's frame.
func (l *pathLog) posAt(f int) Vec {
	s := l.nth(l.seg(f))
	return StepN(s.pos, s.dest, s.speed, f-s.frame)
}

// Reach returns the distance in units from the player who acted, where it
// stood at the action's frame, to entity target, where the player saw it
// (Action.View): what a skill's range check compares with its range. It
// reports false when either entity is gone or the view is older than the
// world keeps.
//
// This is lag compensation, and its trade-off: a target that ran behind a
// wall or out of range on its own screen can still be hit for up to the
// attacker's delay (a round trip and the render delay, at most
// Config.MaxRewind), because the attacker saw it there.
func (w *World) Reach(a Action, target ID) (float64, bool) {
	from, ok1 := w.PositionAt(a.Player, float64(a.Frame))
	to, ok2 := w.PositionAt(target, a.View)
	return math.Sqrt(float64(from.DistSq(to))), ok1 && ok2
}
