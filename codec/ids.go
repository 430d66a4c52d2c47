package codec

import "math/bits"

// maxGolombOrder bounds the Exp-Golomb order k of an ID list; it is written
// in 5 bits.
const maxGolombOrder = 31

// WriteIDs writes a strictly increasing list of IDs: the count in
// bits.Len(maxCount) bits, then (if the list is not empty) an Exp-Golomb
// order k in 5 bits, the first ID as a uvarint and every following ID as its
// gap to the one before, minus one, in Exp-Golomb code of order k. The
// encoder picks the k that makes the list shortest, so dense lists cost one
// bit an ID.
//
// A list longer than maxCount records ErrTooLong; a list that is not strictly
// increasing records ErrOutOfRange. Either way an empty list is written.
func (w *Writer) WriteIDs(ids []uint32, maxCount int) {
	if maxCount < 0 {
		w.fail(ErrInvalid, "max count %d", maxCount)
		return
	}
	countBits := uint(bits.Len(uint(maxCount)))
	if len(ids) > maxCount {
		w.fail(ErrTooLong, "%d IDs > max %d", len(ids), maxCount)
		w.writeBits(0, countBits)
		return
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			w.fail(ErrOutOfRange, "IDs not strictly increasing at index %d", i)
			w.writeBits(0, countBits)
			return
		}
	}
	w.writeBits(uint64(len(ids)), countBits)
	if len(ids) == 0 {
		return
	}
	k := bestGolombOrder(ids)
	w.writeBits(uint64(k), 5)
	w.WriteUvarint(uint64(ids[0]))
	for i := 1; i < len(ids); i++ {
		w.writeGolomb(uint64(ids[i]-ids[i-1]-1), k)
	}
}

// IDsBits returns the number of bits WriteIDs uses for a valid list.
func IDsBits(ids []uint32, maxCount int) int {
	n := bits.Len(uint(maxCount))
	if len(ids) == 0 {
		return n
	}
	k := bestGolombOrder(ids)
	return n + 5 + UvarintBits(uint64(ids[0])) + gapsBits(ids, k)
}

// golombBits is the length of x in Exp-Golomb code of order k.
func golombBits(x uint64, k uint) int {
	n := bits.Len64(x + 1<<k)
	return 2*n - 1 - int(k)
}

func gapsBits(ids []uint32, k uint) int {
	total := 0
	for i := 1; i < len(ids); i++ {
		total += golombBits(uint64(ids[i]-ids[i-1]-1), k)
	}
	return total
}

// bestGolombOrder returns the order that makes the gaps shortest. It
// counts, for every order at once, the cost of each gap (one pass over
// the list and a constant 32 orders), so clustered lists, whose mean gap
// says little, still get the best order.
func bestGolombOrder(ids []uint32) uint {
	if len(ids) < 2 {
		return 0
	}
	var cost [maxGolombOrder + 1]int
	for i := 1; i < len(ids); i++ {
		x := uint64(ids[i] - ids[i-1] - 1)
		for k := range cost {
			cost[k] += golombBits(x, uint(k))
		}
	}
	best := 0
	for k := range cost {
		if cost[k] < cost[best] {
			best = k
		}
	}
	return uint(best)
}

// writeGolomb writes x in Exp-Golomb code of order k, adapted to a
// least-significant-bit-first stream: with y = x + 2^k and n = bits.Len(y),
// it writes n-1-k zero bits, a one bit, then the low n-1 bits of y.
func (w *Writer) writeGolomb(x uint64, k uint) {
	y := x + 1<<k
	n := uint(bits.Len64(y))
	w.writeBits(1<<(n-1-k), n-k) // n-1-k zeros, then a one
	w.writeBits(y, n-1)
}

// ReadIDs reads a list written by WriteIDs with the same maxCount and
// appends it to dst. The count is checked against maxCount and against the
// input left before dst grows; gaps that would overflow 32 bits fail with
// ErrOutOfRange.
func (r *Reader) ReadIDs(dst []uint32, maxCount int) []uint32 {
	n, ok := r.readLen(maxCount, 1)
	if !ok || n == 0 {
		return dst
	}
	k := uint(r.readBits(5))
	first := r.ReadUvarint()
	if r.err != nil {
		return dst
	}
	if first > 1<<32-1 {
		r.fail(ErrOutOfRange, "first ID %d", first)
		return dst
	}
	dst = append(dst, uint32(first))
	prev := first
	for i := 1; i < n; i++ {
		gap := r.readGolomb(k)
		if r.err != nil {
			return dst
		}
		next := prev + gap + 1
		if next > 1<<32-1 {
			r.fail(ErrOutOfRange, "ID %d overflows 32 bits", next)
			return dst
		}
		dst = append(dst, uint32(next))
		prev = next
	}
	return dst
}

// readGolomb reads an Exp-Golomb value of order k whose value fits in 32
// bits; a longer zero run is an error, so a hostile run is cut short.
func (r *Reader) readGolomb(k uint) uint64 {
	zeros := uint(0)
	for r.readBits(1) == 0 {
		if r.err != nil {
			return 0
		}
		zeros++
		if zeros+k > 33 {
			r.fail(ErrOutOfRange, "Exp-Golomb code longer than 32 bits")
			return 0
		}
	}
	n := zeros + k + 1
	y := 1<<(n-1) | r.readBits(uint64(n-1))
	return y - 1<<k
}
