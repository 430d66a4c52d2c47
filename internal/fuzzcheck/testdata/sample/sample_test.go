package sample

import "testing"

func FuzzSample(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeIndirect(b)
		(&msg{}).parse(b)
	})
}
