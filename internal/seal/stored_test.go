package seal

import (
	"errors"
	"testing"
)

// TestStored: a stored record opens under its own key only, and not
// with another secret; FuzzOpenStored feeds records anyone may write.
func TestStored(t *testing.T) {
	keys, _ := NewKeys([]byte("a secret of at least sixteen bytes"))
	c := &Conn{keys: keys}
	c.s, _ = keys.NewSender(RoleNode, "a")
	rec := c.SealStored("w.x", []byte("payload"))
	from, _, got, err := keys.OpenStored("w.x", rec)
	if err != nil || string(got) != "payload" || from.ID != "a" {
		t.Fatalf("opened %q from %v: %v", got, from, err)
	}
	if _, _, _, err := keys.OpenStored("w.y", rec); !errors.Is(err, ErrForged) {
		t.Errorf("under another key: %v", err)
	}
	other, _ := NewKeys([]byte("another secret of sixteen bytes"))
	if _, _, _, err := other.OpenStored("w.x", rec); !errors.Is(err, ErrForged) {
		t.Errorf("with another secret: %v", err)
	}
}

func FuzzOpenStored(f *testing.F) {
	keys, _ := NewKeys([]byte("a secret of at least sixteen bytes"))
	c := &Conn{keys: keys}
	c.s, _ = keys.NewSender(RoleNode, "a")
	f.Add(c.SealStored("k", []byte("x")))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys.OpenStored("k", b)
	})
}
