// Package codec is tongbu's wire format: bit-packed fields, records with
// full and delta encodings, message framing with splitting and bounded
// reassembly, and snappy for bulk payloads. SPEC.md describes every layout.
//
// # Bits
//
// A Writer packs fields least significant bit first; a Reader unpacks them.
// Bounded integers take exactly the bits their range needs (WriteUint with
// max 100 takes 7 bits), signed values are offsets from the bottom of their
// range, varints are zigzagged, real values are quantized to a grid
// (Quantizer), strings carry a bounded length, and sorted ID lists are sent
// as the gaps between IDs in a variable-length code (Exp-Golomb) that
// spends few bits on the small gaps of a dense list. A Writer in measure mode counts bits without
// writing them.
//
// Input is hostile. A Reader checks every read against the bits that remain
// and every length and count against the caller's bound before it grows
// anything; it never panics; it keeps the first error, with the bit
// position, and returns zero values after it. A Writer handed a value out of
// range records the error and writes the nearest valid value.
//
// # Records
//
// A game declares a record once, as a struct with `codec` tags, and
// cmd/codecgen writes its encoders with go generate: EncodeFull, and
// EncodeDelta, which writes a dirty mask (one bit per field) and then only the fields that changed, against a baseline
// the receiver acknowledged. Encode picks the shorter of the two. The
// generated code is straight-line, packs runs of fixed-width fields into
// one 64-bit word, uses no reflection and does not allocate; the Record
// interface names the methods it provides. Code generation was chosen over
// generics with field tables because it lets the compiler see every width
// as a constant: a full record of ten fields encodes in about 15 ns.
//
// # Framing
//
// AppendFrame and ReadFrame carry a message type and length; several frames
// may share a packet. A Splitter cuts a message larger than the channel's
// packet limit into numbered parts, and a Reassembler (one per peer) puts
// them back together in any order, within caps on parts per message, bytes
// held per peer and time, so that no peer can make it hold unbounded memory.
//
// # Bulk
//
// Compress and Decompress wrap byte-aligned bulk payloads (snapshots,
// catch-up, replays) in snappy, storing them raw when that is smaller; the
// decoded length is checked against the caller's cap, and against what the
// block's size makes possible, before any allocation.
//
// The package depends on the standard library and snappy only.
package codec
