package codecbench

import (
	"errors"
	"testing"

	"github.com/tongbu/tongbu/codec"
)

// TestSizes pins the figures SPEC.md and the README state.
func TestSizes(t *testing.T) {
	sizes := map[string]int{}
	for _, c := range Cases() {
		sizes[c.Name] = c.Bits
	}
	for name, want := range map[string]int{
		"tongbu full, standing": 89,
		"tongbu full, moving":   111,
		"tongbu delta, moving":  44,
	} {
		if sizes[name] != want {
			t.Errorf("%s: %d bits, want %d", name, sizes[name], want)
		}
	}
}

func TestUpdateRoundTrip(t *testing.T) {
	for _, u := range []Update{Standing, Moving, MovedOneFrame} {
		var w codec.Writer
		u.EncodeFull(&w)
		var got Update
		r := codec.NewReader(w.Bytes())
		if err := got.DecodeFull(r); err != nil || got != u {
			t.Fatalf("full: got %+v, %v; want %+v", got, err, u)
		}
		if err := r.Done(); err != nil {
			t.Fatal(err)
		}
	}
	base := Moving.Character
	var w codec.Writer
	MovedOneFrame.EncodeDelta(&w, &base)
	var got Update
	lookups := 0
	err := got.DecodeDelta(codec.NewReader(w.Bytes()), func(id uint16) *Character {
		lookups++
		if id != MovedOneFrame.ID {
			t.Fatalf("looked up handle %d, want %d", id, MovedOneFrame.ID)
		}
		return &base
	})
	if err != nil || got != MovedOneFrame || lookups != 1 {
		t.Fatalf("delta: got %+v, %v after %d lookups", got, err, lookups)
	}
}

func TestDeltaUnknownHandle(t *testing.T) {
	base := Moving.Character
	var w codec.Writer
	MovedOneFrame.EncodeDelta(&w, &base)
	got := Standing
	err := got.DecodeDelta(codec.NewReader(w.Bytes()), func(uint16) *Character { return nil })
	if !errors.Is(err, codec.ErrNoBaseline) {
		t.Fatalf("err = %v, want ErrNoBaseline", err)
	}
	if got != Standing {
		t.Fatal("a dropped delta changed the record")
	}
}
