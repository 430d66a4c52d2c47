package engine

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tongbu/tongbu/lockstep"
)

// FuzzFailoverMessages: a room's failover notice and a client's carry
// (SPEC.md §9.6) decode into values within their bounds, or are refused;
// what decodes, written again, decodes the same.
func FuzzFailoverMessages(f *testing.F) {
	f.Add(appendFailover(nil, &failover{standby: "https://eu-2.game.example", carry: 120, resync: true}))
	f.Add(appendFailover(nil, &failover{carry: -1}))
	f.Add(appendCarry(nil, &carry{have: 9, acked: 40, frames: []lockstep.EncodedFrame{{Number: 7, Full: []byte{0x01}, FullBits: 1}, {Number: 8, Full: []byte{0x0d, 0x01}, FullBits: 9}}}))
	f.Add([]byte{kindEngine | typeFailover<<kindBits, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if fo, err := readFailover(b); err == nil {
			if len(fo.standby) > maxMoveURL || fo.carry < -1 || fo.carry > maxWireUvint {
				t.Fatalf("notice %+v", fo)
			}
			again, err := readFailover(appendFailover(nil, fo))
			if err != nil || *again != *fo {
				t.Fatalf("notice %+v, then %+v (%v)", fo, again, err)
			}
		}
		c, err := readCarry(b)
		if err != nil {
			return
		}
		if len(c.frames) > maxCarryFrames || c.have > maxWireUvint {
			t.Fatalf("carry of %d frames, have %d", len(c.frames), c.have)
		}
		for i, fr := range c.frames {
			if fr.FullBits > maxCarryBits || fr.FullBits > 8*len(fr.Full) || fr.Number >= c.have || i > 0 && fr.Number != c.frames[i-1].Number+1 {
				t.Fatalf("carried frame %d of %+v", i, c)
			}
		}
		again, err := readCarry(appendCarry(nil, c))
		if err != nil || again.have != c.have || again.acked != c.acked || len(again.frames) != len(c.frames) {
			t.Fatalf("carry %+v, then %+v (%v)", c, again, err)
		}
		for i := range c.frames {
			if again.frames[i].Number != c.frames[i].Number || !bytes.Equal(again.frames[i].Full, c.frames[i].Full) {
				t.Fatalf("frame %d: %s, then %s", i, fmt.Sprint(c.frames[i]), fmt.Sprint(again.frames[i]))
			}
		}
	})
}
