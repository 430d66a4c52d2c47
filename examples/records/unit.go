package main

// Unit is a game's own record: declare its fields once, with their ranges,
// and `go generate` writes the bit-packed full and delta encoders.
//
//go:generate go run github.com/tongbu/tongbu/cmd/codecgen -type Unit
type Unit struct {
	X, Y    uint16 `codec:"uint,max=4095,delta=6"` // map cells of a 4096 x 4096 map
	Facing  uint8  `codec:"uint,max=7"`            // 8 directions
	Health  uint16 `codec:"uint,max=1000"`
	Shield  uint16 `codec:"uint,max=500,opt"` // costs one bit while 0
	Casting bool
	Name    string `codec:"string,max=16"`
}
