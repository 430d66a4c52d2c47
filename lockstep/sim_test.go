package lockstep

import (
	"encoding/binary"
	"errors"

	"github.com/tongbu/tongbu/lockstep/fixed"
)

// chainSim is the test simulation: its state is a running hash of every
// input of every frame (made-up slots included), so any difference in the
// frames a client runs shows in its hash.
type chainSim struct {
	frames int
	state  uint64
}

func (s *chainSim) Step(f Frame) {
	h := fixed.NewHasher()
	h.WriteUint64(s.state)
	h.WriteInt64(int64(f.Number))
	for i, sl := range f.Slots {
		h.WriteInt64(int64(i))
		if sl.MadeUp {
			h.WriteInt64(-1)
		}
		for _, in := range sl.Inputs {
			h.WriteBytes(in)
		}
	}
	s.state = h.Sum64()
	s.frames++
}

func (s *chainSim) Hash() uint64 { return s.state ^ uint64(s.frames) }

func (s *chainSim) Snapshot() []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(s.frames))
	return binary.LittleEndian.AppendUint64(b, s.state)
}

func (s *chainSim) Restore(b []byte) error {
	if len(b) != 16 {
		return errors.New("chainSim: not a snapshot")
	}
	s.frames, s.state = int(binary.LittleEndian.Uint64(b)), binary.LittleEndian.Uint64(b[8:])
	return nil
}

var _ Snapshotter = (*chainSim)(nil)
