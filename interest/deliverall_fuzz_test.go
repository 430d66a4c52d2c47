package interest

import (
	"reflect"
	"testing"
	"time"
)

// deliverWorld is a world with four joined players, the same every time.
func deliverWorld(t testing.TB) (*World, []ID) {
	w, err := NewWorld(testConfig(), time.Unix(0, 0), discard{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []ID
	for i := range 4 {
		id, err := w.Spawn(Player, Logic{Pos: Vec{int32(500 + 300*i), 500}}, Display{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Join(id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for n := 1; n <= 5; n++ {
		w.Tick(time.Unix(0, 0).Add(time.Duration(n) * w.cfg.Period()))
	}
	return w, ids
}

// FuzzDeliverAll feeds a batch of arbitrary packets, from players and
// from IDs that are not, to World.DeliverAll: no panic, and the same
// result and world as handing them to Deliver one by one. The batch is
// encoded as (player index, length, bytes) triples; an index past the
// players names an ID that is not one.
func FuzzDeliverAll(f *testing.F) {
	w, ids := deliverWorld(f)
	move := uplinkBytes(f, w, &uplink{firstSeq: 1, cmds: []command{{tag: cmdMove, src: Vec{500, 500}, dest: Vec{600, 500}, speed: 8}}})
	disc := uplinkBytes(f, w, &uplink{hasAck: true, ackSeq: 1, ackMask: 1, discover: []uint32{uint32(ids[1]), 99}})
	f.Add(append(append([]byte{0, byte(len(move))}, move...), append([]byte{1, byte(len(disc))}, disc...)...))
	f.Add(append([]byte{7, byte(len(move))}, move...))
	f.Add([]byte{2, 3, 0xff, 0x00, 0x10})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, ids := deliverWorld(t)
		b, _ := deliverWorld(t)
		var batch []Uplink
		for len(data) >= 2 {
			who, n := int(data[0]), int(data[1])
			data = data[2:]
			n = min(n, len(data))
			id := ID(1000 + who)
			if who < len(ids) {
				id = ids[who]
			}
			batch = append(batch, Uplink{Player: id, Msg: data[:n]})
			data = data[n:]
		}
		refused := a.DeliverAll(batch)
		one := 0
		for _, u := range batch {
			if b.Deliver(u.Player, u.Msg) != nil {
				one++
			}
		}
		if refused != one {
			t.Fatalf("DeliverAll refused %d, Deliver one by one %d", refused, one)
		}
		next := time.Unix(0, 0).Add(6 * a.cfg.Period())
		a.Tick(next)
		b.Tick(next)
		if sa, sb := a.Stats(), b.Stats(); !reflect.DeepEqual(sa, sb) {
			t.Fatalf("stats differ:\nDeliverAll %+v\nDeliver    %+v", sa, sb)
		}
	})
}
