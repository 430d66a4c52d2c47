package engine

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/tongbu/tongbu/internal/errstack"
)

// Role is what a ticket lets its holder do in a room or world.
type Role uint8

const (
	// RolePlayer plays: it takes a slot in a lockstep room or an entity
	// in a world.
	RolePlayer Role = iota
	// RoleSpectator watches a lockstep room: it receives frames and sends
	// no input.
	RoleSpectator
)

// String returns "player" or "spectator".
func (r Role) String() string {
	switch r {
	case RolePlayer:
		return "player"
	case RoleSpectator:
		return "spectator"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Ticket is the game server's permission for one player to join one room
// or world once. The game server signs it with the secret it shares with
// the engine (SignTicket, or Server.Ticket) and hands it to its client,
// which presents it when it connects.
type Ticket struct {
	Player  string    // the game's player id, 1..MaxNameLen bytes
	Target  string    // the room or world name, 1..MaxNameLen bytes
	Role    Role      // player or spectator
	Expires time.Time // the ticket is refused from this instant on
	Nonce   uint64    // random, so that a ticket can be used only once
	// Session is when the player's session began: for a ticket the game
	// server signs, when it was issued (SignTicket sets the time it
	// signs when it is zero). The resume credentials a server gives a
	// player descend from its ticket and keep its Session, and none is
	// given past Config.MaxSession after it; Server.Kick refuses the
	// tickets and credentials of sessions begun before the kick.
	Session time.Time

	credential bool // a resume credential the server signed itself (SPEC.md §9.5)
}

// MaxNameLen bounds a player id and a room or world name in bytes.
const MaxNameLen = 64

const (
	// ticketVersion is the version SignTicket writes: 2 carries the
	// session's start and the credential flag. Version 1 (no session)
	// is still read: its session begins when the server takes it.
	ticketVersion = 2
	ticketV1      = 1
	ticketMACLen  = 16 // truncated HMAC-SHA256 (RFC 2104 section 5 allows it)
	minSecretLen  = 16
	// flagCredential marks a resume credential (SPEC.md §9.5).
	flagCredential = 1
)

// SignTicket returns the ticket as a URL-safe string signed with secret
// (HMAC-SHA256 over every field). A zero Nonce is replaced by a random one.
func SignTicket(secret []byte, t Ticket) (string, error) {
	s, err := signTicket(secret, t)
	return s, errstack.With(err)
}

func signTicket(secret []byte, t Ticket) (string, error) {
	if len(secret) < minSecretLen {
		return "", fmt.Errorf("%w: secret shorter than %d bytes", ErrTicketInvalid, minSecretLen)
	}
	if err := checkName("player", t.Player); err != nil {
		return "", err
	}
	if err := checkName("target", t.Target); err != nil {
		return "", err
	}
	if t.Role > RoleSpectator {
		return "", fmt.Errorf("%w: unknown role %d", ErrTicketInvalid, t.Role)
	}
	if t.Nonce == 0 {
		t.Nonce = randomNonce()
	}
	if t.Session.IsZero() {
		t.Session = time.Now()
	}
	flags := byte(0)
	if t.credential {
		flags |= flagCredential
	}
	b := make([]byte, 0, 48+len(t.Player)+len(t.Target)+ticketMACLen)
	b = append(b, ticketVersion, byte(t.Role), flags)
	b = binary.AppendVarint(b, t.Expires.Unix())
	b = binary.AppendVarint(b, t.Session.UnixMilli())
	b = binary.LittleEndian.AppendUint64(b, t.Nonce)
	b = append(b, byte(len(t.Player)))
	b = append(b, t.Player...)
	b = append(b, byte(len(t.Target)))
	b = append(b, t.Target...)
	b = append(b, ticketMAC(secret, b)...)
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// randomNonce returns a random nonzero nonce.
func randomNonce() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if n := binary.LittleEndian.Uint64(b[:]); n != 0 {
			return n
		}
	}
}

func ticketMAC(secret, payload []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(payload)
	return m.Sum(nil)[:ticketMACLen]
}

func checkName(what, s string) error {
	if len(s) == 0 || len(s) > MaxNameLen {
		return fmt.Errorf("%w: %s must be 1 to %d bytes", ErrTicketInvalid, what, MaxNameLen)
	}
	return nil
}

// ParseTicket checks s's signature and expiry at now and returns the
// ticket. It does not check for replay: that takes memory of the tickets
// used, which a Server keeps.
func ParseTicket(secret []byte, s string, now time.Time) (Ticket, error) {
	t, err := parseTicket(secret, s, now)
	return t, errstack.With(err)
}

// parseTicket is ParseTicket without the stack, for the signaling path,
// where a flood of forged tickets must cost little.
func parseTicket(secret []byte, s string, now time.Time) (Ticket, error) {
	var t Ticket
	if len(s) > base64.RawURLEncoding.EncodedLen(40+2*MaxNameLen+ticketMACLen) {
		return t, fmt.Errorf("%w: too long", ErrTicketInvalid)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, fmt.Errorf("%w: not base64url", ErrTicketInvalid)
	}
	if len(b) < ticketMACLen {
		return t, fmt.Errorf("%w: too short", ErrTicketInvalid)
	}
	payload, mac := b[:len(b)-ticketMACLen], b[len(b)-ticketMACLen:]
	if !hmac.Equal(mac, ticketMAC(secret, payload)) {
		return t, fmt.Errorf("%w: bad signature", ErrTicketInvalid)
	}
	// The signature is good, so the fields were written by SignTicket;
	// still, read them defensively.
	if len(payload) < 2 || payload[0] != ticketVersion && payload[0] != ticketV1 {
		return t, fmt.Errorf("%w: unknown version", ErrTicketInvalid)
	}
	v2 := payload[0] == ticketVersion
	t.Role = Role(payload[1])
	p := payload[2:]
	if v2 {
		if len(p) < 1 || p[0]&^flagCredential != 0 {
			return t, fmt.Errorf("%w: flags", ErrTicketInvalid)
		}
		t.credential = p[0]&flagCredential != 0
		p = p[1:]
	}
	exp, n := binary.Varint(p)
	if n <= 0 {
		return t, fmt.Errorf("%w: truncated", ErrTicketInvalid)
	}
	p = p[n:]
	t.Expires = time.Unix(exp, 0)
	if v2 {
		session, n := binary.Varint(p)
		if n <= 0 {
			return t, fmt.Errorf("%w: truncated session", ErrTicketInvalid)
		}
		p = p[n:]
		t.Session = time.UnixMilli(session)
	}
	if len(p) < 8 {
		return t, fmt.Errorf("%w: truncated", ErrTicketInvalid)
	}
	t.Nonce = binary.LittleEndian.Uint64(p)
	p = p[8:]
	var ok bool
	if t.Player, p, ok = readName(p); !ok {
		return t, fmt.Errorf("%w: truncated player", ErrTicketInvalid)
	}
	if t.Target, p, ok = readName(p); !ok || len(p) != 0 {
		return t, fmt.Errorf("%w: truncated target", ErrTicketInvalid)
	}
	if t.Role > RoleSpectator {
		return t, fmt.Errorf("%w: unknown role %d", ErrTicketInvalid, t.Role)
	}
	if !now.Before(t.Expires) {
		return t, fmt.Errorf("%w at %s", ErrTicketExpired, t.Expires.UTC().Format(time.RFC3339))
	}
	return t, nil
}

func readName(p []byte) (string, []byte, bool) {
	if len(p) < 1 || int(p[0]) > len(p)-1 || p[0] == 0 {
		return "", p, false
	}
	n := int(p[0])
	return string(p[1 : 1+n]), p[1+n:], true
}

// usedTickets remembers the nonces of tickets used until they expire, so
// that no ticket opens two connections.
type usedTickets struct {
	mu    sync.Mutex
	seen  map[uint64]time.Time
	sweep time.Time
}

// used reports whether t's nonce was used.
func (u *usedTickets) used(t Ticket) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.seen[t.Nonce]
	return ok
}

// use records t's nonce; it fails if the nonce was seen before.
func (u *usedTickets) use(t Ticket, now time.Time) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen == nil {
		u.seen = make(map[uint64]time.Time)
	}
	if now.After(u.sweep) { // forget what has expired anyway
		for n, exp := range u.seen {
			if !now.Before(exp) {
				delete(u.seen, n)
			}
		}
		u.sweep = now.Add(time.Minute)
	}
	if _, dup := u.seen[t.Nonce]; dup {
		return fmt.Errorf("%w: player %q, target %q", ErrTicketReplayed, t.Player, t.Target)
	}
	u.seen[t.Nonce] = t.Expires
	return nil
}
