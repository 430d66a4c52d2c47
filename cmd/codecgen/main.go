// Command codecgen writes bit-packed full and delta encoders for struct
// types, from the `codec` struct tags of their fields. Run it through
// go generate:
//
//	//go:generate go run github.com/tongbu/tongbu/cmd/codecgen -type Character
//	type Character struct {
//		X     uint16 `codec:"uint,max=65535,delta=8"`
//		Life  uint8  `codec:"uint,max=100"`
//		DestX int16  `codec:"int,min=-1024,max=1023,opt"`
//		Name  string `codec:"string,max=32"`
//	}
//
// For each type it writes, into <type>_codec.go, the methods of
// codec.Record: EncodeFull, DecodeFull, FullBits, DirtyMask, EncodeDelta,
// DecodeDelta, DeltaBits, Encode and Decode. The code is straight-line,
// with no reflection and no allocation (but for bytes and string fields).
//
// Tag grammar: `codec:"KIND[,OPTION...]"`, or `codec:"-"` to leave a field
// out. Kinds:
//
//	bool                      one bit
//	uint,max=M                [0, M] in bits.Len(M) bits (max defaults to the type's)
//	int,min=A,max=B           [A, B] as an offset from A (defaults to the type's range)
//	uvarint, varint           7-bit groups with a continuation bit; varint is zigzagged
//	bytes,max=N  string,max=N a length in bits.Len(N) bits, then the bytes
//	quant,min=A,max=B,step=S  a float on the grid A + i*S
//
// Options: opt adds a presence bit so that a zero value costs one bit;
// delta=N (uint and int) sends a change that fits in N signed bits as a
// difference from the baseline, in a delta. An untagged bool, uintN or intN
// field takes its type's kind and range.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	typeList := flag.String("type", "", "comma-separated struct type names (required)")
	output := flag.String("output", "", "output file (default <first type, lower case>_codec.go)")
	dir := flag.String("dir", ".", "package directory")
	flag.Parse()
	if *typeList == "" {
		fmt.Fprintln(os.Stderr, "codecgen: -type is required")
		flag.Usage()
		os.Exit(2)
	}
	typeNames := strings.Split(*typeList, ",")
	src, err := generate(*dir, typeNames)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codecgen:", err)
		os.Exit(1)
	}
	out := *output
	if out == "" {
		out = strings.ToLower(typeNames[0]) + "_codec.go"
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(*dir, out)
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "codecgen:", err)
		os.Exit(1)
	}
}
