package interest

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
)

// Moves are numbered per entity, epochBits of the number on the wire
// (SPEC.md §8, moves): a move that goes on from the entity's previous
// path, which a client holding that path (the number before) finds its
// source on, goes without the source.
const (
	epochBits = 3
	epochMask = 1<<epochBits - 1
)

// writeMove writes a move's body after its stamp: its number, then the
// source (unless cont: the move goes on from the previous path, whose
// speed was prev) and the path. The path's offset takes the short form
// within half a region each way; a continuing move's speed is one bit
// when it is the previous path's.
func (l *layout) writeMove(w *codec.Writer, ep uint8, cont bool, src, dest Vec, speed, prev int32) {
	w.WriteBits(uint64(ep), epochBits)
	w.WriteBool(cont)
	if !cont {
		l.writePos(w, src)
	}
	moving := src != dest && speed > 0
	w.WriteBool(moving)
	if !moving {
		return
	}
	m := int64(l.cfg.MaxMove)
	dx := min(max(int64(dest.X)-int64(src.X), -m), m)
	dy := min(max(int64(dest.Y)-int64(src.Y), -m), m)
	h := l.shortMove
	short := dx >= -h && dx < h && dy >= -h && dy < h
	w.WriteBool(short)
	if short {
		w.WriteInt(dx, -h, h-1)
		w.WriteInt(dy, -h, h-1)
	} else {
		w.WriteInt(dx, -m, m)
		w.WriteInt(dy, -m, m)
	}
	speed = min(max(speed, 1), int32(l.cfg.MaxSpeed))
	if cont {
		w.WriteBool(speed != prev)
		if speed == prev {
			return
		}
	}
	w.WriteUint(uint64(speed-1), uint64(l.cfg.MaxSpeed-1))
}

// readMove reads what writeMove wrote into m: Pos, Dest and Speed, or for
// a continuing move (m.cont) the offset in m.off, and Speed 0 for "the
// previous path's" (Client.resolve finds the rest).
func (l *layout) readMove(r *codec.Reader, m *downMsg) {
	m.ep = uint8(r.ReadBits(epochBits))
	m.cont = r.ReadBool()
	m.lg.Pos = Vec{} // a continuing move's is found by Client.resolve
	if !m.cont {
		m.lg.Pos = l.readPos(r)
	}
	m.lg.Dest, m.off, m.lg.Speed = Vec{}, Vec{}, 0
	if r.ReadBool() {
		if h := l.shortMove; r.ReadBool() {
			m.off = Vec{int32(r.ReadInt(-h, h-1)), int32(r.ReadInt(-h, h-1))}
		} else {
			mm := int64(l.cfg.MaxMove)
			m.off = Vec{int32(r.ReadInt(-mm, mm)), int32(r.ReadInt(-mm, mm))}
		}
		if !m.cont || r.ReadBool() {
			m.lg.Speed = int32(r.ReadUint(uint64(l.cfg.MaxSpeed-1))) + 1
		}
		if m.off == (Vec{}) && r.Err() == nil {
			r.Fail(fmt.Errorf("%w: a move to where it starts", ErrMalformed))
		}
	}
	if !m.cont {
		m.lg.Dest = m.lg.Pos.Add(m.off)
		if m.off == (Vec{}) {
			m.lg.Speed = 0
		}
		if !l.onMap(m.lg.Dest) {
			r.Fail(fmt.Errorf("%w: destination %v off the map", ErrMalformed, m.lg.Dest))
		}
	}
}
