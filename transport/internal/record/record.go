// Package record protects DTLS 1.2 application records inline, in the
// caller's goroutine, once pion/dtls has finished the handshake: the keys
// come from the handshake's master secret through pion's exported PRF, and
// records are sealed and opened with AES-128-GCM (RFC 5288), with the
// DTLS replay window (RFC 6347 §4.1.2.6). No goroutine sits between the
// socket and the caller.
package record

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/tongbu/tongbu/internal/prefetch"

	"crypto/sha256"
	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/prf"
)

// Content types.
const (
	ChangeCipherSpec = 20
	Alert            = 21
	Handshake        = 22
	ApplicationData  = 23
)

// HeaderLen is a DTLS 1.2 record header's length.
const HeaderLen = 13

// Overhead is what sealing adds to a payload: the header, the explicit
// nonce (Prefix, before it) and the GCM tag (TagLen, after it).
const (
	Prefix   = HeaderLen + 8
	TagLen   = 16
	Overhead = Prefix + TagLen
)

// The only suite the inline path serves; the handshake is held to it.
const SuiteID = dtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256

// Errors of received records.
var (
	ErrMalformed = errors.New("dtls: malformed record")
	ErrAuth      = errors.New("dtls: record failed authentication")
	ErrReplay    = errors.New("dtls: replayed or too old record")
	ErrEpoch     = errors.New("dtls: record of an unexpected epoch")
)

// Header is a record header.
type Header struct {
	Type  uint8
	Epoch uint16
	Seq   uint64 // 48 bits
	Len   int
}

// Next splits the first record off a datagram: its header, its body and
// the rest of the datagram.
func Next(b []byte) (Header, []byte, []byte, error) {
	if len(b) < HeaderLen {
		return Header{}, nil, nil, fmt.Errorf("%w: %d bytes, under a header", ErrMalformed, len(b))
	}
	h := Header{
		Type:  b[0],
		Epoch: binary.BigEndian.Uint16(b[3:]),
		Seq:   uint64(binary.BigEndian.Uint16(b[5:]))<<32 | uint64(binary.BigEndian.Uint32(b[7:])),
		Len:   int(binary.BigEndian.Uint16(b[11:])),
	}
	if b[1] != 0xfe || b[2] != 0xfd && b[2] != 0xff {
		return Header{}, nil, nil, fmt.Errorf("%w: version %#x%02x", ErrMalformed, b[1], b[2])
	}
	if HeaderLen+h.Len > len(b) {
		return Header{}, nil, nil, fmt.Errorf("%w: length %d of %d bytes", ErrMalformed, h.Len, len(b)-HeaderLen)
	}
	return h, b[HeaderLen : HeaderLen+h.Len], b[HeaderLen+h.Len:], nil
}

// Cipher seals and opens the records of one connection's epoch 1.
type Cipher struct {
	seal, open cipher.AEAD
	sealIV     [4]byte
	openIV     [4]byte
	seq        atomic.Uint64 // next sequence number to send
	// Scratch for the nonces and additional data (the AEAD, an interface,
	// would make arrays on the stack escape: a record would allocate).
	sealNonce, openNonce [12]byte
	sealAAD, openAAD     [13]byte
	// The replay window: the highest sequence number opened, and a bitmap
	// of the 64 below it.
	top    uint64
	window uint64
	opened bool
}

// state mirrors the fields of pion/dtls's serialized State (gob matches
// them by name).
type state struct {
	LocalEpoch     uint16
	LocalRandom    [32]byte
	RemoteRandom   [32]byte
	CipherSuiteID  uint16
	MasterSecret   []byte
	SequenceNumber uint64
	IsClient       bool
}

// FromState derives the record keys from a finished handshake's state.
// The next record sent continues the sequence pion/dtls left at.
func FromState(st *dtls.State) (*Cipher, error) {
	raw, err := st.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("dtls: handshake state: %w", err)
	}
	var s state
	if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&s); err != nil {
		return nil, fmt.Errorf("dtls: handshake state: %w", err)
	}
	if dtls.CipherSuiteID(s.CipherSuiteID) != SuiteID {
		return nil, fmt.Errorf("dtls: cipher suite %#x, want %#x", s.CipherSuiteID, uint16(SuiteID))
	}
	if s.LocalEpoch != 1 || len(s.MasterSecret) == 0 {
		return nil, fmt.Errorf("dtls: handshake not finished (epoch %d)", s.LocalEpoch)
	}
	client, server := s.LocalRandom[:], s.RemoteRandom[:]
	if !s.IsClient {
		client, server = server, client
	}
	k, err := prf.GenerateEncryptionKeys(s.MasterSecret, client, server, 0, 16, 4, sha256.New)
	if err != nil {
		return nil, fmt.Errorf("dtls: keys: %w", err)
	}
	sealKey, sealIV, openKey, openIV := k.ServerWriteKey, k.ServerWriteIV, k.ClientWriteKey, k.ClientWriteIV
	if s.IsClient {
		sealKey, sealIV, openKey, openIV = openKey, openIV, sealKey, sealIV
	}
	c, err := New(sealKey, sealIV, openKey, openIV)
	if err != nil {
		return nil, err
	}
	c.seq.Store(s.SequenceNumber)
	return c, nil
}

// New returns a cipher from the write keys and IVs of each direction.
func New(sealKey, sealIV, openKey, openIV []byte) (*Cipher, error) {
	c := &Cipher{}
	var err error
	if c.seal, err = gcm(sealKey); err != nil {
		return nil, err
	}
	if c.open, err = gcm(openKey); err != nil {
		return nil, err
	}
	copy(c.sealIV[:], sealIV)
	copy(c.openIV[:], openIV)
	return c, nil
}

// Spans returns the memory a record's Open (open) or Seal reads: the
// Cipher's own and its AEAD's key schedule and tables. A server keeps
// them to ask the CPU for them before it comes to a peer's datagram (see
// package prefetch).
func (c *Cipher) Spans(open bool) [2]prefetch.Span {
	a := c.seal
	if open {
		a = c.open
	}
	spans := [2]prefetch.Span{prefetch.SpanOf(unsafe.Pointer(c), unsafe.Sizeof(*c))}
	if v := reflect.ValueOf(a); v.Kind() == reflect.Pointer && !v.IsNil() {
		spans[1] = prefetch.SpanOf(v.UnsafePointer(), v.Type().Elem().Size())
	}
	return spans
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("dtls: key: %w", err)
	}
	return cipher.NewGCM(b)
}

// Seal appends to dst one epoch-1 record of type typ holding payload.
// It is not safe for concurrent use: the connection's lock serializes it.
func (c *Cipher) Seal(dst []byte, typ uint8, payload []byte) []byte {
	start := len(dst)
	dst = slices.Grow(dst, Prefix+len(payload)+TagLen)[:start+Prefix]
	dst = append(dst, payload...)
	rec := c.SealInPlace(dst[start:], typ)
	return dst[:start+len(rec)]
}

// SealInPlace seals the record whose payload the caller wrote at
// rec[Prefix:], where it is: it writes the header and the explicit nonce
// before it, encrypts it in place and appends the tag, for which rec's
// capacity must leave TagLen bytes. It returns the record, in rec's
// memory. A message is written once, by its encoder, into the buffer the
// datagram goes out from. It is not safe for concurrent use.
func (c *Cipher) SealInPlace(rec []byte, typ uint8) []byte {
	n := len(rec) - Prefix
	if n < 0 || cap(rec)-len(rec) < TagLen {
		panic("record: SealInPlace without room for the header or the tag")
	}
	seq := c.seq.Add(1) - 1
	nonce, aad := c.sealNonce[:], c.sealAAD[:]
	copy(nonce[:4], c.sealIV[:])
	binary.BigEndian.PutUint64(nonce[4:], 1<<48|seq)
	rec[0], rec[1], rec[2] = typ, 0xfe, 0xfd
	copy(rec[3:11], nonce[4:]) // epoch and sequence number
	binary.BigEndian.PutUint16(rec[11:], uint16(8+n+TagLen))
	copy(rec[HeaderLen:Prefix], nonce[4:]) // the explicit nonce
	copy(aad[:8], nonce[4:])
	aad[8], aad[9], aad[10] = typ, 0xfe, 0xfd
	binary.BigEndian.PutUint16(aad[11:], uint16(n))
	out := c.seal.Seal(rec[Prefix:Prefix], nonce, rec[Prefix:], aad)
	return rec[:Prefix+len(out)]
}

// Open authenticates and decrypts an epoch-1 record's body in place and
// returns the plaintext, checking the replay window. It is not safe for
// concurrent use.
func (c *Cipher) Open(h Header, body []byte) ([]byte, error) {
	if h.Epoch != 1 {
		return nil, ErrEpoch
	}
	if len(body) < 8+16 {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(body))
	}
	if !c.fresh(h.Seq) {
		return nil, ErrReplay
	}
	nonce, aad := c.openNonce[:], c.openAAD[:]
	copy(nonce[:4], c.openIV[:])
	copy(nonce[4:], body[:8])
	binary.BigEndian.PutUint16(aad[0:], h.Epoch)
	binary.BigEndian.PutUint16(aad[2:], uint16(h.Seq>>32))
	binary.BigEndian.PutUint32(aad[4:], uint32(h.Seq))
	aad[8], aad[9], aad[10] = h.Type, 0xfe, 0xfd
	binary.BigEndian.PutUint16(aad[11:], uint16(len(body)-8-16))
	out, err := c.open.Open(body[8:8], nonce, body[8:], aad)
	if err != nil {
		return nil, ErrAuth
	}
	c.mark(h.Seq)
	return out, nil
}

// fresh reports whether seq is neither replayed nor older than the window.
func (c *Cipher) fresh(seq uint64) bool {
	switch {
	case !c.opened || seq > c.top:
		return true
	case c.top-seq >= 64:
		return false
	}
	return c.window&(1<<(c.top-seq)) == 0
}

func (c *Cipher) mark(seq uint64) {
	switch {
	case !c.opened:
		c.opened, c.top, c.window = true, seq, 1
	case seq > c.top:
		if d := seq - c.top; d < 64 {
			c.window = c.window<<d | 1
		} else {
			c.window = 1
		}
		c.top = seq
	default:
		c.window |= 1 << (c.top - seq)
	}
}
