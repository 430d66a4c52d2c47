package engine

import (
	"errors"
	"reflect"
	"testing"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
)

func TestWelcomeRoundTrip(t *testing.T) {
	for _, in := range []*welcome{
		{mode: Lockstep, target: "arena-1", role: RolePlayer, slot: 3,
			lockstep: lockstep.Config{Players: 4, Hz: 20, Fill: lockstep.FillRepeat, Late: lockstep.LateNextFrame}.WithDefaults()},
		{mode: Lockstep, target: "arena-1", role: RoleSpectator, slot: 12, lockstep: lockstep.Config{}.WithDefaults()},
		{mode: Interest, target: "mmo", role: RolePlayer, self: 77,
			interest: interest.Config{Width: 16, Height: 8, LeaveMessages: true}.WithDefaults()},
	} {
		msg := appendWelcome(nil, in)
		if !isEngine(msg) || engineType(msg) != typeWelcome {
			t.Fatalf("%v welcome: not recognised as one", in.mode)
		}
		out, err := readWelcome(msg)
		if err != nil {
			t.Fatalf("%v welcome: %v", in.mode, err)
		}
		if out.mode != in.mode || out.target != in.target || out.role != in.role || out.slot != in.slot ||
			out.self != in.self || !reflect.DeepEqual(out.lockstep, in.lockstep) {
			t.Fatalf("got %+v, want %+v", out, in)
		}
		if in.mode == Interest {
			a, b := out.interest, in.interest
			a.Policy, b.Policy = interest.Policy{}, interest.Policy{}
			if a.RegionSize != b.RegionSize || a.Width != b.Width || a.Height != b.Height || a.Hz != b.Hz ||
				a.MaxEntities != b.MaxEntities || a.History != b.History || a.MaxSpeed != b.MaxSpeed || a.MaxCustom != b.MaxCustom {
				t.Fatalf("interest config: got %+v, want %+v", a, b)
			}
			if a.LeaveMessages { // the server's own: not sent
				t.Fatal("the welcome carried LeaveMessages")
			}
		}
	}
}

func TestWelcomeRejects(t *testing.T) {
	bad := appendWelcome(nil, &welcome{mode: Interest, target: "w", self: 0, interest: interest.Config{}.WithDefaults()})
	if _, err := readWelcome(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("entity 0: %v, want ErrMalformed", err)
	}
	cfg := lockstep.Config{}.WithDefaults()
	cfg.MaxAhead = 0
	if _, err := readWelcome(appendWelcome(nil, &welcome{mode: Lockstep, target: "r", lockstep: cfg})); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a room that may not run ahead: %v, want ErrMalformed", err)
	}
	if _, err := readWelcome(appendBye(nil, byeClosed, "")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a bye read as a welcome: %v", err)
	}
}

func TestByeRoundTrip(t *testing.T) {
	long := make([]byte, 500)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		reason int
		text   string
	}{{byeShutdown, ""}, {byeRefused, "room full"}, {byeReplaced, string(long)}} {
		e, err := readBye(appendBye(nil, tc.reason, tc.text))
		if err != nil {
			t.Fatal(err)
		}
		want := tc.text
		if len(want) > maxByeText {
			want = want[:maxByeText]
		}
		if e.Reason != byeNames[tc.reason] || e.Detail != want {
			t.Fatalf("got %+v", e)
		}
	}
}

func FuzzEngineMessage(f *testing.F) {
	f.Add(appendWelcome(nil, &welcome{mode: Lockstep, target: "r", lockstep: lockstep.Config{}.WithDefaults()}))
	f.Add(appendWelcome(nil, &welcome{mode: Interest, target: "w", self: 1, interest: interest.Config{}.WithDefaults()}))
	f.Add(appendBye(nil, byeRefused, "no"))
	f.Add([]byte{7})
	f.Fuzz(func(t *testing.T, msg []byte) {
		if w, err := readWelcome(msg); err == nil {
			// What decodes is usable: the mode client accepts it.
			if w.mode == Lockstep {
				if _, err := lockstep.NewClient(w.lockstep, 0); err != nil {
					t.Fatalf("welcome decoded to an unusable lockstep config: %v", err)
				}
			} else if _, err := interest.NewClient(w.interest, w.self); err != nil {
				t.Fatalf("welcome decoded to an unusable interest config: %v", err)
			}
		}
		readBye(msg)
	})
}
