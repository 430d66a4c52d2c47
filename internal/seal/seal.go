// Package seal authenticates and encrypts the messages the processes of
// a cluster send each other over NATS (package cluster's nodes and
// directories, package matchmaker's Services and queues, the lobbies
// that place rooms), so that a NATS client without the cluster's secret
// can neither read a ticket off a subject nor change anything: every
// message is AES-256-GCM under a key derived from the secret for its
// sender (its role, its id and its process instance), names that
// sender, carries the time it was sent and a sequence number, and is
// bound to the subject it was published on; a reply is also bound to
// the request it answers.
//
// A receiver refuses a message it cannot open (a forgery, or a secret it
// does not hold), one sent more than MaxSkew from its own clock (stale),
// and one whose sender's sequence number is not past the newest it took
// from that sender on the same subscription (a replay: NATS delivers one
// publisher's messages to a subscription in order, so the numbers only
// grow). The format is SPEC.md §11.3's; the design DESIGN.md's.
//
// Keys takes several secrets, so that a cluster can rotate its secret:
// the first seals, every one opens (see Keys).
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Role says what kind of process sent a message. It is part of the
// sender's key, so that a message sealed as one role cannot pass for
// another's.
type Role uint8

// The roles.
const (
	RoleNode      Role = iota + 1 // a server process of the cluster (cluster.Node)
	RoleDirectory                 // a process that follows the cluster (cluster.Watch)
	RoleClient                    // a process that places rooms and players (a lobby: cluster.CreateRoom, JoinWorld)
	RoleService                   // a matchmaking Service
	RoleQueue                     // a matchmaking queue
	RoleBus                       // a publisher or subscriber of natsbus
	maxRole       = RoleBus
)

// String returns the role's name.
func (r Role) String() string {
	switch r {
	case RoleNode:
		return "node"
	case RoleDirectory:
		return "directory"
	case RoleClient:
		return "client"
	case RoleService:
		return "service"
	case RoleQueue:
		return "queue"
	case RoleBus:
		return "bus"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Peer names the sender of a message: its role, its id (a node's id, a
// Service's, a random one for a lobby) and its process instance.
type Peer struct {
	Role     Role
	ID       string
	Instance uint64
}

func (p Peer) String() string { return fmt.Sprintf("%v %s (instance %x)", p.Role, p.ID, p.Instance) }

// Bounds and sizes of the format.
const (
	// MinSecret is the shortest secret Keys takes.
	MinSecret = 16
	// MaxIDLen bounds a sender's id.
	MaxIDLen = 64
	// MaxSecrets bounds the secrets one Keys holds.
	MaxSecrets = 8
	// DefaultMaxSkew is how far from the receiver's clock a message's
	// time may be by default.
	DefaultMaxSkew = time.Minute
	// Overhead bounds what sealing adds to a payload.
	Overhead = fixedLen + MaxIDLen + tagLen + tagLen

	version   = 1
	tagLen    = 16
	keyIDLen  = 4
	flagReply = 1
	// version, key id, role, flags, id length; then the id; then
	// instance, sequence, time.
	preLen   = 1 + keyIDLen + 1 + 1 + 1
	fixedLen = preLen + 8 + 8 + 8
)

// Why a message is refused; Open's errors match one with errors.Is.
var (
	// ErrForged: the message is not one this cluster sealed: it does not
	// parse, names a secret the receiver does not hold, or fails its
	// authentication (altered, sealed with another secret or for another
	// subject, or a reply to another request).
	ErrForged = errors.New("seal: forged or not sealed with the cluster's secret")
	// ErrReplayed: a message not after the newest the receiver took from
	// the same sender: one it took already, or an older one it missed.
	ErrReplayed = errors.New("seal: replayed")
	// ErrStale: the message's time is further than MaxSkew from the
	// receiver's clock (an old message replayed, or a clock that is off).
	ErrStale = errors.New("seal: stale")
)

// Keys are the secrets of a cluster: the first seals what this process
// sends, and a message sealed with any of them opens. To rotate a
// secret without a pause, give every process the new one beside the old
// (old first), then make the new one first everywhere, then drop the
// old one.
type Keys struct {
	roots []root // roots[0] seals
}

type root struct {
	id     [keyIDLen]byte
	secret []byte
}

// NewKeys returns the keys of secret (which seals) and of accept (which
// open too); each secret is at least MinSecret bytes.
func NewKeys(secret []byte, accept ...[]byte) (*Keys, error) {
	all := append([][]byte{secret}, accept...)
	if len(all) > MaxSecrets {
		return nil, fmt.Errorf("seal: %d secrets, at most %d", len(all), MaxSecrets)
	}
	k := &Keys{}
	for i, s := range all {
		if len(s) < MinSecret {
			return nil, fmt.Errorf("seal: secret %d holds %d bytes, want at least %d", i, len(s), MinSecret)
		}
		r := root{secret: append([]byte(nil), s...)}
		m := hmac.New(sha256.New, r.secret)
		m.Write([]byte("tongbu cluster v1 key id"))
		copy(r.id[:], m.Sum(nil))
		k.roots = append(k.roots, r)
	}
	return k, nil
}

// ID names the secret that seals, for logs: 8 hex digits that do not
// reveal it.
func (k *Keys) ID() string { return hex.EncodeToString(k.roots[0].id[:]) }

func (k *Keys) root(id [keyIDLen]byte) *root {
	for i := range k.roots {
		if k.roots[i].id == id {
			return &k.roots[i]
		}
	}
	return nil
}

// aeadFor derives the key of one sender instance under r.
func (r *root) aeadFor(p Peer) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, r.secret)
	m.Write([]byte("tongbu cluster v1 sender\x00"))
	m.Write([]byte{byte(p.Role), 0})
	m.Write([]byte(p.ID))
	sender := m.Sum(nil)
	m = hmac.New(sha256.New, sender)
	m.Write([]byte("tongbu cluster v1 instance\x00"))
	m.Write(binary.LittleEndian.AppendUint64(nil, p.Instance))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// CheckID reports whether id may name a sender: 1 to MaxIDLen bytes.
func CheckID(id string) error {
	if len(id) == 0 || len(id) > MaxIDLen {
		return fmt.Errorf("seal: sender id of %d bytes, want 1 to %d", len(id), MaxIDLen)
	}
	return nil
}

// Sender seals the messages of one sender instance. Seal numbers them:
// a caller that publishes what it seals holds its lock across both
// (Conn does), so that they leave in the order of their numbers.
type Sender struct {
	peer Peer
	root root
	aead cipher.AEAD

	mu  sync.Mutex
	seq uint64
	aad []byte
	buf []byte
}

// NewSender returns the sender role id, with a random instance.
func (k *Keys) NewSender(role Role, id string) (*Sender, error) {
	if role < RoleNode || role > maxRole {
		return nil, fmt.Errorf("seal: unknown role %d", role)
	}
	if err := CheckID(id); err != nil {
		return nil, err
	}
	var b [8]byte
	p := Peer{Role: role, ID: id}
	for p.Instance == 0 {
		rand.Read(b[:])
		p.Instance = binary.LittleEndian.Uint64(b[:])
	}
	aead, err := k.roots[0].aeadFor(p)
	if err != nil {
		return nil, err
	}
	return &Sender{peer: p, root: k.roots[0], aead: aead}, nil
}

// Peer returns the sender's name.
func (s *Sender) Peer() Peer { return s.peer }

// seal seals payload for subject at now, a reply to the request whose
// tag is bind when bind is not nil, into s.buf, and returns it (valid
// until the next seal). s.mu is held.
func (s *Sender) seal(subject string, bind []byte, payload []byte, now time.Time) []byte {
	s.seq++
	b := s.buf[:0]
	flags := byte(0)
	if bind != nil {
		flags |= flagReply
	}
	b = append(b, version)
	b = append(b, s.root.id[:]...)
	b = append(b, byte(s.peer.Role), flags, byte(len(s.peer.ID)))
	b = append(b, s.peer.ID...)
	b = binary.LittleEndian.AppendUint64(b, s.peer.Instance)
	b = binary.LittleEndian.AppendUint64(b, s.seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(now.UnixMilli()))
	b = append(b, bind...)
	s.aad = append(append(append(s.aad[:0], subject...), 0), b...)
	var nonce [12]byte
	binary.LittleEndian.PutUint64(nonce[4:], s.seq)
	b = s.aead.Seal(b, nonce[:], payload, s.aad)
	s.buf = b
	return b
}

// Seal returns payload sealed by s for subject at now, in a new slice:
// for a caller that does not publish it at once (tests, fuzz seeds).
func (s *Sender) Seal(subject string, payload []byte, now time.Time) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.seal(subject, nil, payload, now)...)
}

// SealReply is Seal for a reply to the request sealed as req.
func (s *Sender) SealReply(subject string, req, payload []byte, now time.Time) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.seal(subject, TagOf(req), payload, now)...)
}

// TagOf returns a sealed message's tag, which a reply to it is bound
// to; nil for a message too short to have one.
func TagOf(msg []byte) []byte {
	if len(msg) < tagLen {
		return nil
	}
	return msg[len(msg)-tagLen:]
}

// header is a sealed message's clear part, parsed.
type header struct {
	key   [keyIDLen]byte
	peer  Peer
	flags byte
	seq   uint64
	at    time.Time
	bind  []byte // a reply's: the tag of the request it answers
	n     int    // its length
}

// parse reads a sealed message's header; it checks lengths only.
func parse(b []byte) (header, error) {
	var h header
	if len(b) < preLen || b[0] != version {
		return h, fmt.Errorf("%w: not a sealed message (version %v)", ErrForged, b[:min(1, len(b))])
	}
	copy(h.key[:], b[1:])
	h.peer.Role, h.flags = Role(b[preLen-3]), b[preLen-2]
	idLen := int(b[preLen-1])
	if h.peer.Role < RoleNode || h.peer.Role > maxRole || h.flags&^flagReply != 0 || idLen == 0 || idLen > MaxIDLen {
		return h, fmt.Errorf("%w: header: role %d, flags %#x, id of %d bytes", ErrForged, h.peer.Role, h.flags, idLen)
	}
	h.n = fixedLen + idLen
	if h.flags&flagReply != 0 {
		h.n += tagLen
	}
	if len(b) < h.n+tagLen {
		return h, fmt.Errorf("%w: %d bytes, a header of %d and a tag", ErrForged, len(b), h.n)
	}
	p := b[preLen:]
	h.peer.ID = string(p[:idLen])
	p = p[idLen:]
	h.peer.Instance = binary.LittleEndian.Uint64(p)
	h.seq = binary.LittleEndian.Uint64(p[8:])
	h.at = time.UnixMilli(int64(binary.LittleEndian.Uint64(p[16:])))
	if h.flags&flagReply != 0 {
		h.bind = p[24 : 24+tagLen]
	}
	return h, nil
}

// Claimed returns the sender a message names, without opening it: for
// the log line of a message refused.
func Claimed(msg []byte) (Peer, bool) {
	h, err := parse(msg)
	return h.peer, err == nil
}

// aeads caches the keys of the sender instances heard from, shared by a
// process's openers: deriving one takes two HMACs and an AES key
// schedule.
type aeads struct {
	mu sync.Mutex
	m  map[aeadKey]cipher.AEAD
}

type aeadKey struct {
	key  [keyIDLen]byte
	peer Peer
}

// maxAEADs bounds the cache: only messages that opened add to it, so
// only the cluster's own processes fill it; past the bound it starts
// afresh.
const maxAEADs = 8192

func (c *aeads) get(keys *Keys, h *header) (cipher.AEAD, error) {
	k := aeadKey{h.key, h.peer}
	c.mu.Lock()
	a := c.m[k]
	c.mu.Unlock()
	if a != nil {
		return a, nil
	}
	r := keys.root(h.key)
	if r == nil {
		return nil, fmt.Errorf("%w: sealed with a secret this process does not hold (key %x)", ErrForged, h.key)
	}
	return r.aeadFor(h.peer)
}

func (c *aeads) put(h *header, a cipher.AEAD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxAEADs {
		c.m = map[aeadKey]cipher.AEAD{}
	}
	c.m[aeadKey{h.key, h.peer}] = a
}

// open authenticates and decrypts msg, received on subject, into dst.
// It checks neither freshness nor replay.
func open(keys *Keys, cache *aeads, aad *[]byte, dst []byte, subject string, msg []byte) (header, []byte, error) {
	h, err := parse(msg)
	if err != nil {
		return h, nil, err
	}
	a, err := cache.get(keys, &h)
	if err != nil {
		return h, nil, err
	}
	*aad = append(append(append((*aad)[:0], subject...), 0), msg[:h.n]...)
	var nonce [12]byte
	binary.LittleEndian.PutUint64(nonce[4:], h.seq)
	out, err := a.Open(dst, nonce[:], msg[h.n:], *aad)
	if err != nil {
		return h, nil, fmt.Errorf("%w: %s on %s fails authentication", ErrForged, h.peer, subject)
	}
	cache.put(&h, a)
	return h, out, nil
}

// Opener opens the messages of one subscription and remembers, for each
// sender instance, the last sequence numbers it took, to refuse replays.
// Its methods are safe for concurrent use, but a subscription's messages
// should reach it in the order NATS delivers them.
type Opener struct {
	keys    *Keys
	cache   *aeads
	maxSkew time.Duration

	mu      sync.Mutex
	windows map[aeadKey]*seqWindow
	swept   time.Time
	aad     []byte // scratch for the additional data, reused
}

// seqWindow is what an Opener remembers of one sender instance: the
// newest sequence number it took. NATS delivers one publisher's messages
// to a subscription in the order they were published, and a Sender
// numbers them in that order, so a subscription takes a sender's
// messages in increasing numbers only: anything else is a replay (or a
// message this subscription missed being sent again, which is one too).
type seqWindow struct {
	max  uint64
	seen time.Time
}

// maxWindows bounds the sender instances an Opener remembers; past it
// the one heard from longest ago is forgotten (its later messages are
// stale by then, or it is gone).
const maxWindows = 16384

// NewOpener returns an Opener of keys' messages with its own replay
// windows; maxSkew 0 is DefaultMaxSkew.
func NewOpener(keys *Keys, maxSkew time.Duration) *Opener {
	return newOpener(keys, &aeads{}, maxSkew)
}

func newOpener(keys *Keys, cache *aeads, maxSkew time.Duration) *Opener {
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	return &Opener{keys: keys, cache: cache, maxSkew: maxSkew, windows: map[aeadKey]*seqWindow{}}
}

// Open checks msg, received on subject at now (not a reply), and returns
// its sender and its payload appended to dst. Errors match ErrForged,
// ErrStale or ErrReplayed; a refused message leaves nothing behind.
func (o *Opener) Open(dst []byte, subject string, msg []byte, now time.Time) (Peer, []byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, out, err := open(o.keys, o.cache, &o.aad, dst, subject, msg)
	if err != nil {
		return h.peer, nil, err
	}
	if h.bind != nil {
		return h.peer, nil, fmt.Errorf("%w: a reply from %s published on %s", ErrForged, h.peer, subject)
	}
	if d := now.Sub(h.at); d > o.maxSkew || -d > o.maxSkew {
		return h.peer, nil, fmt.Errorf("%w: %s's message on %s is %v from this clock", ErrStale, h.peer, subject, d.Round(time.Millisecond))
	}
	k := aeadKey{h.key, h.peer}
	w := o.windows[k]
	if w == nil {
		o.sweep(now)
		w = &seqWindow{max: h.seq, seen: now}
		o.windows[k] = w
		return h.peer, out, nil
	}
	if !w.take(h.seq) {
		return h.peer, nil, fmt.Errorf("%w: %s's message %d on %s (newest %d)", ErrReplayed, h.peer, h.seq, subject, w.max)
	}
	w.seen = now
	return h.peer, out, nil
}

// take takes seq, and reports false for one not after the newest.
func (w *seqWindow) take(seq uint64) bool {
	if seq <= w.max {
		return false
	}
	w.max = seq
	return true
}

// sweep forgets the senders not heard from for twice the skew (whatever
// they sent before is stale by now), at most every few seconds, and
// makes room at the bound; o.mu is held.
func (o *Opener) sweep(now time.Time) {
	if len(o.windows) < maxWindows && now.Sub(o.swept) < 10*time.Second {
		return
	}
	o.swept = now
	for k, w := range o.windows {
		if now.Sub(w.seen) > 2*o.maxSkew {
			delete(o.windows, k)
		}
	}
	if len(o.windows) < maxWindows {
		return
	}
	var oldest aeadKey
	var at time.Time
	for k, w := range o.windows {
		if at.IsZero() || w.seen.Before(at) {
			oldest, at = k, w.seen
		}
	}
	delete(o.windows, oldest)
}

// Senders returns the sender instances o remembers.
func (o *Opener) Senders() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.windows)
}

// OpenReply checks msg, received on subject at now, as a reply to the
// request whose tag is req (TagOf of what was sent), and returns its
// sender and payload appended to dst. Replies need no window: each
// answers one request, which takes one.
func (o *Opener) OpenReply(dst []byte, subject string, req, msg []byte, now time.Time) (Peer, []byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, out, err := open(o.keys, o.cache, &o.aad, dst, subject, msg)
	if err != nil {
		return h.peer, nil, err
	}
	if h.bind == nil || !hmac.Equal(h.bind, req) {
		return h.peer, nil, fmt.Errorf("%w: %s's message on %s answers no request of ours", ErrForged, h.peer, subject)
	}
	if d := now.Sub(h.at); d > o.maxSkew || -d > o.maxSkew {
		return h.peer, nil, fmt.Errorf("%w: %s's reply is %v from this clock", ErrStale, h.peer, d.Round(time.Millisecond))
	}
	return h.peer, out, nil
}
