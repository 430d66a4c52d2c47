package codecbench

import "testing"

// BenchmarkCharacter runs every case of Cases: tongbu's encodings and the
// baselines, each reporting bits/op beside ns/op and allocs/op.
func BenchmarkCharacter(b *testing.B) {
	for _, c := range Cases() {
		b.Run(c.Name+"/encode", c.Encode)
		b.Run(c.Name+"/decode", c.Decode)
	}
}
