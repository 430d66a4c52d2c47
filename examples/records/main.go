// Command records shows how a game declares a record for the codec and what
// its updates cost: a unit walks for a few frames, and each frame is sent as
// a delta against the last acknowledged state, falling back to a full record
// when that is shorter.
package main

import (
	"fmt"
	"os"

	"github.com/tongbu/tongbu/codec"
)

func main() {
	acked := Unit{X: 1000, Y: 2000, Facing: 2, Health: 1000, Name: "scout"}
	var w codec.Writer
	acked.EncodeFull(&w)
	fmt.Printf("full record: %d bits (%d bytes)\n", w.Len(), len(w.Bytes()))

	cur := acked
	for frame := 1; frame <= 5; frame++ {
		cur.X += 3
		if frame == 3 {
			cur.Health -= 120 // hit
		}
		if frame == 5 {
			cur.Shield, cur.Casting = 200, true
		}
		w.Reset(w.Bytes()[:0])
		cur.Encode(&w, &acked)

		// The receiver applies it to the same baseline.
		recv := acked
		if err := recv.Decode(codec.NewReader(w.Bytes()), &acked); err != nil || recv != cur {
			fmt.Fprintln(os.Stderr, "round trip failed:", err)
			os.Exit(1)
		}
		fmt.Printf("frame %d: %2d bits (dirty mask %07b)\n", frame, w.Len(), cur.DirtyMask(&acked))
		acked = recv // acknowledged
	}
}
