package game

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tongbu/tongbu/lockstep/fixed"
)

func TestInputRoundTrip(t *testing.T) {
	for _, in := range []Input{
		{},
		{MoveX: -1, MoveY: 1, Fire: true, Aim: 0},
		{MoveX: 1, MoveY: -1, Aim: AimSteps - 1},
		{MoveY: 1, Fire: true, Aim: 1234},
	} {
		b := in.Append(nil)
		if len(b) != InputSize {
			t.Fatalf("%+v: %d bytes", in, len(b))
		}
		got, err := DecodeInput(b)
		if err != nil || got != in {
			t.Errorf("%+v: decoded %+v, %v", in, got, err)
		}
	}
}

func TestInputAppendNormalises(t *testing.T) {
	got, err := DecodeInput(Input{MoveX: 7, MoveY: -100, Aim: AimSteps + 5}.Append(nil))
	want := Input{MoveX: 1, MoveY: -1, Aim: 5}
	if err != nil || got != want {
		t.Errorf("got %+v, %v, want %+v", got, err, want)
	}
}

func TestDecodeInputRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", []byte{0, 0}},
		{"long", []byte{0, 0, 0, 0}},
		{"reserved bit", []byte{1 << 5, 0, 0}},
		{"move x 3", []byte{3, 0, 0}},
		{"move y 3", []byte{3 << 2, 0, 0}},
		{"aim over", []byte{0, 0, AimSteps >> 8}},
	} {
		if _, err := DecodeInput(tc.b); !errors.Is(err, ErrInput) {
			t.Errorf("%s: err %v, want ErrInput", tc.name, err)
		}
	}
}

func TestAim(t *testing.T) {
	for a := range uint16(AimSteps) {
		v := AimVec(a)
		if got := AimOf(v); got != a {
			t.Fatalf("AimOf(AimVec(%d)) = %d", a, got)
		}
		if d := v.Len().Sub(fixed.One).Abs(); d > 4 {
			t.Fatalf("AimVec(%d) has length off by %d raw units", a, d)
		}
	}
	for _, tc := range []struct {
		v    fixed.Vec
		want uint16
	}{
		{pt(1, 0), 0},
		{pt(0, 1), AimSteps / 4}, // +y is down the screen: a quarter turn clockwise
		{pt(-1, 0), AimSteps / 2},
		{pt(0, -1), 3 * AimSteps / 4},
		{pt(0, 0), 0},
	} {
		if got := AimOf(tc.v); got != tc.want {
			t.Errorf("AimOf(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}

func FuzzDecodeInput(f *testing.F) {
	f.Add([]byte{})
	f.Add(Input{MoveX: -1, MoveY: 1, Fire: true, Aim: 4095}.Append(nil))
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := DecodeInput(b)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("error %v does not wrap ErrInput", err)
			}
			return
		}
		if again := in.Append(nil); !bytes.Equal(again, b) {
			t.Fatalf("%x decoded to %+v, which encodes to %x", b, in, again)
		}
	})
}
