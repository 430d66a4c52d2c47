package lockstep

import (
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// TestHostileLifecycleDroppedAndCounted: lifecycle messages and hash
// reports that break the rules are dropped with their reason, and the
// room carries on.
func TestHostileLifecycleDroppedAndCounted(t *testing.T) {
	start := time.Unix(0, 0)
	room, err := NewRoom(Config{Players: 3}, start, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(n int) time.Time { return room.Config().cutTime(start, n) }
	room.Tick(at(40))
	now := at(40)
	spec, err := room.AddSpectator(time.Second, now)
	if err != nil {
		t.Fatal(err)
	}
	up := func(u uplink) []byte {
		var w codec.Writer
		u.encode(&w)
		return w.Bytes()
	}
	life := func(f func(w *codec.Writer)) []byte {
		var w codec.Writer
		f(&w)
		return w.Bytes()
	}
	room.Leave(2)
	tests := []struct {
		name   string
		peer   int
		msg    []byte
		reason int
	}{
		{"hash of an unchecked frame", 0, up(uplink{hasHash: true, hashFrame: 7, hash: 1}), DropHash},
		{"hash of a frame not cut", 0, up(uplink{hasHash: true, hashFrame: 45, hash: 1}), DropHash},
		{"input from a spectator", spec, up(uplink{firstSeq: 1, inputs: []upInput{{41, []byte{1}}}}), DropSpectator},
		{"packet from a player who left", 2, up(uplink{}), DropAway},
		{"spectator id never given", spec + 1, up(uplink{}), DropSlot},
		{"truncated lifecycle", 0, []byte{kindLife}, DropLifecycle},
		{"live while live", 0, life(func(w *codec.Writer) { encodeFrameNumber(w, lifeLive, 3) }), DropLifecycle},
		{"dump not asked for", 0, life(func(w *codec.Writer) {
			d := dumpPart{frame: 15, parts: 1, data: []byte("x")}
			d.encode(w)
		}), DropLifecycle},
		{"catch-up sent up", 0, life(func(w *codec.Writer) { catchUpHeader(w, 0, 0, true) }), DropLifecycle},
		{"report with trailing bytes", 0, append(life(func(w *codec.Writer) { (&playReport{}).encode(w) }), 1, 2), DropLifecycle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := room.Stats().Dropped[tt.reason]
			if room.Deliver(tt.peer, tt.msg, now) == nil {
				t.Fatal("no error")
			}
			if got := room.Stats().Dropped[tt.reason]; got != before+1 {
				t.Fatalf("dropped[%s] %d -> %d", DropName(tt.reason), before, got)
			}
		})
	}
	// Two different hashes of one frame from one player: the second is
	// dropped; the first stands.
	room.Deliver(0, up(uplink{sent: 1, hasHash: true, hashFrame: 30, hash: 5}), now)
	if err := room.Deliver(0, up(uplink{sent: 2, hasHash: true, hashFrame: 30, hash: 6}), now); err == nil || room.Stats().Dropped[DropHash] != 3 {
		t.Fatalf("second hash: %v, drops %v", err, room.Stats().Dropped)
	}
	room.Deliver(1, up(uplink{sent: 1, hasHash: true, hashFrame: 30, hash: 5}), now) // a second, agreeing reporter makes a quorum
	room.Tick(at(200))
	if h, ok := room.MajorityHash(30); !ok || h != 5 {
		t.Fatalf("majority of frame 30: %x %v", h, ok)
	}
}

func FuzzClientLifecycle(f *testing.F) {
	var w codec.Writer
	encodeFrameNumber(&w, lifeDumpRequest, 30)
	f.Add(w.Bytes())
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, _ := NewRoom(Config{Players: 2}, start, rec)
	room.Tick(start.Add(10 * time.Second))
	room.Join(1, start.Add(10*time.Second))
	room.Tick(start.Add(11 * time.Second))
	for _, m := range rec.reliable {
		f.Add(m)
	}
	w.Reset(nil)
	encodeWait(&w, 40, 0b10)
	f.Add(w.Bytes())
	w.Reset(nil)
	writeLife(&w, lifeMore)
	w.WriteUvarint(lifeViewPart)
	w.WriteUvarint(3)
	w.WriteUint(1, MaxViewParts)
	writeChanges(&w, []StateChange{{Entity: 5, Data: []byte("hp 10")}})
	f.Add(w.Bytes())
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, _ := NewClient(Config{Players: 2, Strict: true}, 1)
		c.Deliver(start, msg)
		c.Advance(start.Add(time.Second))
		a, _ := NewClient(Config{Players: 2, Authoritative: true}, 1)
		a.Deliver(start, msg)
		a.Advance(start.Add(time.Second))
		if a.views.bytes > MaxViewHoldBytes || a.views.bytes < 0 {
			t.Fatalf("%d view bytes held", a.views.bytes)
		}
		room, _ := NewRoom(Config{Players: 2}, start, &recorder{})
		room.Tick(start.Add(time.Second))
		room.Deliver(0, msg, start.Add(time.Second))
	})
}
