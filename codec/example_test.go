package codec_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

func ExampleWriter() {
	w := codec.NewWriter(make([]byte, 0, 64))
	w.WriteUint(5, 7)     // 3 bits: max 7 needs 3
	w.WriteInt(-2, -4, 3) // 3 bits: the offset 2 from -4
	w.WriteBool(true)     // 1 bit
	w.WriteUvarint(300)   // 16 bits: two 7-bit groups
	if err := w.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Len(), "bits")
	fmt.Printf("% x\n", w.Bytes())

	// A value out of range is recorded, and the nearest bound written.
	w.WriteUint(9, 7)
	fmt.Println(w.Err())
	// Output:
	// 23 bits
	// 55 56 01
	// codec: value out of range: 9 > max 7
}

func ExampleReader() {
	r := codec.NewReader([]byte{0x55, 0x56, 0x01})
	a := r.ReadUint(7)
	b := r.ReadInt(-4, 3)
	c := r.ReadBool()
	d := r.ReadUvarint()
	fmt.Println(a, b, c, d, r.Done())

	// Hostile input: a length field claiming more bytes than remain.
	r = codec.NewReader([]byte{0xff, 0x00})
	fmt.Println(r.ReadBytes(nil, 255) == nil, r.Err())
	// Output:
	// 5 -2 true 300 <nil>
	// true codec: input truncated: length 255 needs 2040 bits, 8 remain (at bit 8)
}

func ExampleQuantizer() {
	heading := codec.MustQuantizer(0, 360, 0.5)
	fmt.Println(heading.Bits(), "bits,", heading.MaxIndex()+1, "points")
	fmt.Println(heading.Round(123.26), heading.Equal(10.1, 10.2))

	w := codec.NewWriter(nil)
	w.WriteQuantized(heading, 271.8)
	r := codec.NewReader(w.Bytes())
	fmt.Println(r.ReadQuantized(heading))

	_, err := codec.NewQuantizer(0, 1, 0)
	fmt.Println(err)
	// Output:
	// 10 bits, 721 points
	// 123.5 true
	// 272
	// codec: invalid field description: quantizer [0, 1] step 0
}

func ExampleSplitter() {
	s := codec.Splitter{Limit: 64}
	msg := bytes.Repeat([]byte("snapshot "), 20) // 180 bytes: too big for one packet

	var packets [][]byte
	err := s.Split(3, msg, func(p []byte) error {
		packets = append(packets, append([]byte(nil), p...)) // p is reused
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range packets {
		f, _, _ := codec.ReadFrame(p)
		fmt.Printf("packet of %d bytes: part %d of %d, %d payload bytes\n", len(p), f.Part, f.Parts, len(f.Payload))
	}

	// The receiver may get the parts in any order.
	r := codec.NewReassembler(codec.ReassemblerConfig{MaxBytes: 1 << 16})
	now := time.Unix(0, 0)
	for _, i := range []int{2, 0, 3, 1} {
		f, _, err := codec.ReadFrame(packets[i])
		if err != nil {
			fmt.Println(err)
			return
		}
		whole, err := r.Add(now, f)
		if err != nil {
			fmt.Println(err)
			return
		}
		if whole != nil {
			fmt.Println("reassembled:", bytes.Equal(whole, msg), "type", f.Type)
		}
	}
	// Output:
	// packet of 64 bytes: part 0 of 4, 58 payload bytes
	// packet of 64 bytes: part 1 of 4, 58 payload bytes
	// packet of 64 bytes: part 2 of 4, 58 payload bytes
	// packet of 12 bytes: part 3 of 4, 6 payload bytes
	// reassembled: true type 3
}

func ExampleCompress() {
	snapshot := bytes.Repeat([]byte("entity 17 at (120, 45) facing north; "), 100)
	frame := codec.Compress(nil, snapshot)
	fmt.Println("method", frame[0], "smaller:", len(frame) < len(snapshot)/10)

	out, err := codec.Decompress(nil, frame, 1<<20)
	fmt.Println(bytes.Equal(out, snapshot), err)

	// The receiver's cap is checked before anything is allocated.
	_, err = codec.Decompress(nil, frame, 1000)
	fmt.Println(err)

	random := []byte{0x8f, 0x1e, 0x33, 0xa0}
	fmt.Printf("% x\n", codec.Compress(nil, random)) // stored: not smaller
	// Output:
	// method 1 smaller: true
	// true <nil>
	// codec: decoded payload over cap: block claims 3700 bytes, cap 1000
	// 00 8f 1e 33 a0
}
