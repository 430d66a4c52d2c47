//go:build !js

package cluster

import "testing"

// FuzzDecodeStored feeds world records as the checkpoint bucket may hold
// them once opened: a bad one is refused with an error, never a panic.
func FuzzDecodeStored(f *testing.F) {
	f.Add((&storedWorld{owner: "a", cp: []byte("checkpoint")}).encode())
	f.Add([]byte{1, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeStored(b)
		if err == nil && checkID(r.owner) != nil {
			t.Fatalf("owner %q taken", r.owner)
		}
	})
}
