package lockstep

import (
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// verdictRoom is a room whose players report hashes by hand: the lies
// and collusions of hostile clients, without a network.
type verdictRoom struct {
	t     *testing.T
	room  *Room
	start time.Time
	sent  [MaxPlayers]uint16
}

func newVerdictRoom(t *testing.T, cfg Config) *verdictRoom {
	start := time.Unix(0, 0)
	room, err := NewRoom(cfg, start, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	v := &verdictRoom{t: t, room: room, start: start}
	v.tick(200)
	return v
}

func (v *verdictRoom) at(n int) time.Time { return v.room.Config().cutTime(v.start, n) }

// tick runs the room up to frame n.
func (v *verdictRoom) tick(n int) { v.room.Tick(v.at(n)) }

// report delivers slot's hash of frame.
func (v *verdictRoom) report(slot, frame int, hash uint64) {
	v.t.Helper()
	v.sent[slot]++
	var w codec.Writer
	u := uplink{sent: v.sent[slot], hasHash: true, hashFrame: frame, hash: hash}
	u.encode(&w)
	if err := v.room.Deliver(slot, w.Bytes(), v.at(v.room.NextFrame())); err != nil {
		v.t.Fatalf("player %d's hash of frame %d: %v", slot, frame, err)
	}
}

// TestDesyncVerdicts: what the room concludes from hash reports that
// disagree, when hostile players lie about their state.
func TestDesyncVerdicts(t *testing.T) {
	const good, bad, other = 0xA, 0xB, 0xC
	type rep struct {
		slot int
		hash uint64
	}
	tests := []struct {
		name    string
		players int
		away    []int // players who left before the reports
		reports []rep
		desync  []int // named in EventDesync
		agreed  int
		dispute []int // named in EventDispute
	}{
		{"one of two lies: a dispute, no one named", 2, nil,
			[]rep{{0, good}, {1, bad}}, nil, 0, []int{0, 1}},
		{"one of three lies: the liar named", 3, nil,
			[]rep{{0, good}, {1, bad}, {2, good}}, []int{1}, 2, nil},
		{"two of three collude: the honest one named (a vote's limit)", 3, nil,
			[]rep{{0, good}, {1, bad}, {2, bad}}, []int{0}, 2, nil},
		{"three different hashes: a dispute", 3, nil,
			[]rep{{0, good}, {1, bad}, {2, other}}, nil, 0, []int{0, 1, 2}},
		{"a lone live reporter decides nothing", 3, []int{1, 2},
			[]rep{{0, bad}}, nil, 0, nil},
		{"the liar reports first, alone for a while", 3, nil,
			[]rep{{1, bad}, {0, good}, {2, good}}, []int{1}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerdictRoom(t, Config{Players: tt.players})
			for _, s := range tt.away {
				v.room.Leave(s)
			}
			for _, r := range tt.reports {
				v.report(r.slot, 30, r.hash)
			}
			v.tick(400) // past the room's wait for late reports
			evs := v.room.Events()
			var desync, dispute []int
			agreed := 0
			for _, e := range eventsOf(evs, EventDesync) {
				desync, agreed = append(desync, e.Players...), e.Agreed
			}
			for _, e := range eventsOf(evs, EventDispute) {
				dispute = append(dispute, e.Players...)
				if len(e.Hashes) != len(e.Players) {
					t.Fatalf("dispute %+v: a hash for each player named", e)
				}
			}
			if !slices.Equal(desync, tt.desync) || agreed != tt.agreed || !slices.Equal(dispute, tt.dispute) {
				t.Fatalf("named %v (agreed %d), disputed %v; want %v (agreed %d), disputed %v",
					desync, agreed, dispute, tt.desync, tt.agreed, tt.dispute)
			}
		})
	}
}

// TestDesyncFlagClearedByRejoin: a player named once is not named again
// for later frames, keeps reporting, and is judged anew after it rejoins
// (a fresh client, caught up from the room's log). A dispute is raised
// once until the reporters agree again.
func TestDesyncFlagClearedByRejoin(t *testing.T) {
	v := newVerdictRoom(t, Config{Players: 3})
	named := func() []int {
		var out []int
		for _, e := range eventsOf(v.room.Events(), EventDesync) {
			out = append(out, e.Players...)
		}
		return out
	}
	for _, f := range []int{30, 45} {
		v.report(0, f, 1)
		v.report(1, f, 2)
		v.report(2, f, 1)
	}
	if n := named(); !slices.Equal(n, []int{1}) {
		t.Fatalf("named %v, want player 1 once", n)
	}
	if err := v.room.Join(1, v.at(v.room.NextFrame())); err != nil {
		t.Fatal(err)
	}
	v.report(0, 60, 1)
	v.report(1, 60, 2)
	v.report(2, 60, 1)
	if n := named(); !slices.Equal(n, []int{1}) {
		t.Fatalf("after rejoining: named %v, want player 1 again", n)
	}
	if q := v.room.Quality(); q.Peers[1].DesyncFrame != 30 {
		t.Fatalf("quality desync frame %d, want the first, 30", q.Peers[1].DesyncFrame)
	}

	two := newVerdictRoom(t, Config{Players: 2})
	disputes := func() int { return len(eventsOf(two.room.Events(), EventDispute)) }
	for _, f := range []int{30, 45} {
		two.report(0, f, 1)
		two.report(1, f, 2)
	}
	if n := disputes(); n != 1 {
		t.Fatalf("%d disputes for two disputed frames in a row, want 1", n)
	}
	two.report(0, 60, 3)
	two.report(1, 60, 3)
	two.report(0, 75, 4)
	two.report(1, 75, 5)
	if n := disputes(); n != 1 {
		t.Fatalf("%d disputes after the players agreed and then differed again, want 1", n)
	}
}
