// Package codec is the benchmark of tongbu's bit-packed codec: the seed's
// character update encoded and decoded by tongbu's codec, beside
// encoding/binary and encoding/json, in bytes and nanoseconds.
package codec
