package codec

import "fmt"

// FieldError wraps err with the name of the field being decoded. Generated
// decoders use it so that an error names the field that was wrong.
func FieldError(field string, err error) error {
	return fmt.Errorf("%s: %w", field, err)
}

// Record is what cmd/codecgen generates for a struct type T: full and delta
// encodings of the same fields. Generic code (a baseline store, a replication
// ring) can hold any record through it:
//
//	func send[T any, P codec.Record[T]](w *codec.Writer, cur, acked P) { cur.Encode(w, acked) }
type Record[T any] interface {
	*T
	EncodeFull(w *Writer)
	DecodeFull(r *Reader) error
	FullBits() int
	DirtyMask(base *T) uint64
	EncodeDelta(w *Writer, base *T)
	DecodeDelta(r *Reader, base *T) error
	DeltaBits(base *T) int
	Encode(w *Writer, base *T)
	Decode(r *Reader, base *T) error
}
