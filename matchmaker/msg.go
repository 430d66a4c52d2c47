//go:build !js

package matchmaker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/internal/seal"
)

// Options tune a Service and a Queue. Secret is required (or the
// Cluster options' Secret); the rest has defaults. Every process must use
// the same Prefix and Secret.
type Options struct {
	// Secret is the cluster's secret (cluster.Options.Secret): every
	// message between Services and queues is sealed with keys derived
	// from it for its sender (authenticated, encrypted: the room tickets
	// of an Assignment are never in the clear on a subject; fresh), and a
	// message that does not open, is stale or replayed, or comes from a
	// sender that may not send it (a heartbeat naming another Service, a
	// claim from a Service that does not hold the ticket) is dropped.
	// Empty: Cluster.Secret.
	Secret []byte
	// AcceptSecrets are secrets whose messages are taken too, during a
	// rotation (cluster.Options.AcceptSecrets); empty: Cluster's.
	AcceptSecrets [][]byte
	// MaxSkew is how far a message's time may be from this clock
	// (default 1 min; cluster.Options.MaxSkew).
	MaxSkew time.Duration
	// Prefix starts every subject (default "tongbu.mm"), so that several
	// matchmaking services can share one NATS.
	Prefix string
	// ID names a Service (1..32 bytes of letters, digits, '-' and '_';
	// default random). A restarted Service may keep its id: queues tell
	// its instances apart.
	ID string
	// Heartbeat is how often a Service announces itself (default 1 s),
	// and Misses how many of its intervals may pass without one before
	// queues take it for dead and send its tickets to another (default 3).
	Heartbeat time.Duration
	Misses    int
	// RequestTimeout bounds one request between a queue and a Service, and
	// one placement (default 2 s).
	RequestTimeout time.Duration
	// Interval is how often a Service forms matches (default 200 ms).
	Interval time.Duration
	// ClaimTimeout is how long a queue holds a ticket for a match it
	// granted before it takes it back, for a Service that never finishes
	// placing it (default 10 s). A Service declared dead loses its claims
	// at once.
	ClaimTimeout time.Duration
	// Unavailable is how long a queue keeps a ticket while no Service
	// takes it before it gives up with ErrUnavailable (default 30 s).
	Unavailable time.Duration
	// Refresh is how long a ticket waits at its Service before its queue
	// sends it there again (default 10 s): the Service takes a ticket it
	// holds as held, and one it lost (whatever the cause) as new, so that
	// no ticket waits on a Service that forgot it.
	Refresh time.Duration
	// Cluster are the options of the cluster the Service places matches
	// on (its Prefix and timeouts).
	Cluster *cluster.Options
	// Place, when set, places a Service's matches instead of the cluster
	// (then Sites says where they may go).
	Place func(ctx context.Context, m Match) (cluster.Placement, error)
	// Sites, with Place, lists where matches may go; nil: anywhere.
	Sites func() []Site
	// OnMatch is called, from the Service's goroutine, with every match
	// placed and its placement, for the game's records. It must not block.
	OnMatch func(Match, cluster.Placement)
	// Logger receives the logs (default: discarded).
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Prefix == "" {
		c.Prefix = "tongbu.mm"
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = time.Second
	}
	c.Heartbeat = max(c.Heartbeat, 10*time.Millisecond)
	if c.Misses <= 0 {
		c.Misses = 3
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 2 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = 200 * time.Millisecond
	}
	if c.ClaimTimeout <= 0 {
		c.ClaimTimeout = 10 * time.Second
	}
	if c.Unavailable <= 0 {
		c.Unavailable = 30 * time.Second
	}
	if c.Refresh <= 0 {
		c.Refresh = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// One secret for the cluster and its matchmaking: whichever is given
	// serves both.
	if c.Cluster != nil {
		cl := *c.Cluster
		if len(c.Secret) == 0 {
			c.Secret, c.AcceptSecrets = cl.Secret, cl.AcceptSecrets
		}
		if c.MaxSkew == 0 {
			c.MaxSkew = cl.MaxSkew
		}
		if len(cl.Secret) == 0 {
			cl.Secret, cl.AcceptSecrets = c.Secret, c.AcceptSecrets
		}
		c.Cluster = &cl
	} else if len(c.Secret) > 0 {
		c.Cluster = &cluster.Options{Secret: c.Secret, AcceptSecrets: c.AcceptSecrets, MaxSkew: c.MaxSkew, Logger: c.Logger}
	}
	return c
}

// conn returns a sealed connection on nc that speaks as role id.
func (o *Options) conn(nc *nats.Conn, role seal.Role, id string) (*seal.Conn, error) {
	if len(o.Secret) == 0 {
		return nil, fmt.Errorf("%w: Options.Secret: the cluster's secret is required (at least %d bytes, the same in every process)", ErrTicket, seal.MinSecret)
	}
	k, err := seal.NewKeys(o.Secret, o.AcceptSecrets...)
	if err != nil {
		return nil, fmt.Errorf("%w: Options.Secret: %v", ErrTicket, err)
	}
	return seal.NewConn(nc, k, role, id, seal.Config{MaxSkew: o.MaxSkew, Logger: o.Logger, Name: "matchmaker"})
}

// publishJSON seals v as JSON and publishes it on subject.
func publishJSON(c *seal.Conn, log *slog.Logger, subject string, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		err = c.Publish(subject, b)
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		log.Warn("matchmaker: publish", "subject", subject, "err", err)
	}
}

// respond seals v as JSON as the reply to m.
func respond(m *seal.Msg, v any) {
	if b, err := json.Marshal(v); err == nil {
		m.Respond(b)
	}
}

// operator reports whether m's sender may set the build switches: a
// lobby or tool (SetSwitches), a node or a Service.
func operator(m *seal.Msg) bool {
	switch m.From.Role {
	case seal.RoleClient, seal.RoleNode, seal.RoleService:
		return true
	}
	return false
}

// serviceSpeaks reports whether m comes from the Service instance it
// names: a Service speaks for itself only.
func serviceSpeaks(m *seal.Msg, id string, instance uint64) bool {
	return m.From.Role == seal.RoleService && m.From.ID == id && m.From.Instance == instance
}

// queueSpeaks reports whether m comes from the queue it names.
func queueSpeaks(m *seal.Msg, id string) bool {
	return m.From.Role == seal.RoleQueue && m.From.ID == id
}

// The subjects of SPEC.md §12, under the prefix.
func (o *Options) subjHeartbeat() string       { return o.Prefix + ".hb" }
func (o *Options) subjProbe() string           { return o.Prefix + ".probe" }
func (o *Options) subjSwitch() string          { return o.Prefix + ".switch" }
func (o *Options) subjSubmit(mm string) string { return o.Prefix + ".submit." + mm }
func (o *Options) subjCancel(mm string) string { return o.Prefix + ".cancel." + mm }
func (o *Options) subjQueue(q string) string   { return o.Prefix + ".q." + q }

// maxMsg bounds any message decoded; maxBatch the tickets of one.
const (
	maxMsg   = 4 << 20
	maxBatch = 10000
	maxIDLen = 32 // a Service's or a Queue's id: one subject token
)

// heartbeat is what a Service publishes on P.hb.
type heartbeat struct {
	ID         string      `json:"id"`
	Instance   uint64      `json:"instance"`
	IntervalMS int64       `json:"interval_ms"`
	Switches   [][2]string `json:"switches,omitempty"`
	SwitchesAt int64       `json:"switches_at,omitempty"` // unix ns of the switch message they came with
	Tickets    int         `json:"tickets"`
	Leaving    bool        `json:"leaving,omitempty"`
}

// switchMsg is what the operator publishes on P.switch (SetSwitches).
type switchMsg struct {
	Switches [][2]string `json:"switches"`
	At       int64       `json:"at"`
}

// submitMsg is a queue's request on P.submit.<service>.
type submitMsg struct {
	Queue   string   `json:"queue"`
	Tickets []Ticket `json:"tickets"`
}

// submitReply answers it: the tickets refused, with why.
type submitReply struct {
	Instance uint64            `json:"instance"`
	Refused  map[string]string `json:"refused,omitempty"`
}

// cancelMsg is a queue's message on P.cancel.<service>: forget these.
type cancelMsg struct {
	Queue string   `json:"queue"`
	IDs   []string `json:"ids"`
}

// queueMsg is a Service's request on P.q.<queue>.
type queueMsg struct {
	Op       string       `json:"op"` // "claim", "assign", "release", "expire", "seat"
	Service  string       `json:"service"`
	Instance uint64       `json:"instance"`
	Claims   []claim      `json:"claims,omitempty"`  // claim
	Assign   []Assignment `json:"assign,omitempty"`  // assign
	Matches  []string     `json:"matches,omitempty"` // release
	IDs      []string     `json:"ids,omitempty"`     // expire
	Seat     *seatMsg     `json:"seat,omitempty"`    // seat
}

// claim asks a queue to hold its tickets of a match for it.
type claim struct {
	Match   string   `json:"match"`
	Tickets []string `json:"tickets"`
}

// seatMsg asks the queue of a backfill ticket for the players' tickets to
// its room.
type seatMsg struct {
	Ticket  string   `json:"ticket"`
	Match   string   `json:"match"`
	Players []string `json:"players"`
}

// queueReply answers a queueMsg.
type queueReply struct {
	Granted []string          `json:"granted,omitempty"` // claim: the matches granted
	Gone    []string          `json:"gone,omitempty"`    // claim: tickets the queue no longer has for this Service
	Refused []string          `json:"refused,omitempty"` // assign: tickets not held for that match
	Tickets map[string]string `json:"tickets,omitempty"` // seat
	Error   string            `json:"error,omitempty"`
}

// Assignment tells a ticket where its match is: its players dial URL,
// each with its own ticket from Tickets (engine.Dial(ctx, URL, ticket)).
type Assignment struct {
	// Ticket is the matchmaking ticket's id, Match the match's.
	Ticket string `json:"ticket"`
	Match  string `json:"match"`
	Mode   string `json:"mode"`
	// Room, Node and URL say where it is played (cluster.Placement), and
	// Region in which region.
	Room   string `json:"room"`
	Node   string `json:"node,omitempty"`
	URL    string `json:"url,omitempty"`
	Region string `json:"region,omitempty"`
	// Tickets are the room tickets of the ticket's players, by player id.
	Tickets map[string]string `json:"tickets"`
	// Team is the team the players play on, and Teams every player of the
	// match by team (for a backfill, those joining).
	Team  int        `json:"team"`
	Teams [][]Player `json:"teams"`
	// WorstRTT is the longest round trip of the match's players to Region
	// (-1 unknown).
	WorstRTT int `json:"worst_rtt_ms"`
}

func checkServiceID(id string) error {
	if len(id) == 0 || len(id) > maxIDLen {
		return fmt.Errorf("%w: id must be 1 to %d bytes", ErrTicket, maxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: id %q: only letters, digits, '-' and '_'", ErrTicket, id)
		}
	}
	return nil
}

func checkSwitches(sw [][2]string) error {
	if len(sw) > 256 {
		return fmt.Errorf("%w: %d switches", ErrTicket, len(sw))
	}
	for _, l := range sw {
		for _, b := range l {
			if err := checkToken("build", b); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *heartbeat) validate() error {
	if err := checkServiceID(h.ID); err != nil {
		return err
	}
	if d := time.Duration(h.IntervalMS) * time.Millisecond; d < 10*time.Millisecond || d > time.Minute {
		return fmt.Errorf("%w: heartbeat interval %d ms", ErrTicket, h.IntervalMS)
	}
	return checkSwitches(h.Switches)
}

func (s *switchMsg) validate() error { return checkSwitches(s.Switches) }

func (s *submitMsg) validate() error {
	if err := checkServiceID(s.Queue); err != nil {
		return err
	}
	if len(s.Tickets) == 0 || len(s.Tickets) > maxBatch {
		return fmt.Errorf("%w: %d tickets in one submit", ErrTicket, len(s.Tickets))
	}
	return nil // each ticket is checked on its own: one bad ticket is refused alone
}

func (r *submitReply) validate() error {
	if len(r.Refused) > maxBatch {
		return fmt.Errorf("%w: %d refusals", ErrTicket, len(r.Refused))
	}
	return nil
}

func (c *cancelMsg) validate() error {
	if err := checkServiceID(c.Queue); err != nil {
		return err
	}
	if len(c.IDs) > maxBatch {
		return fmt.Errorf("%w: %d ids", ErrTicket, len(c.IDs))
	}
	return nil
}

func (q *queueMsg) validate() error {
	if err := checkServiceID(q.Service); err != nil {
		return err
	}
	switch q.Op {
	case "claim", "assign", "release", "expire":
	case "seat":
		if q.Seat == nil || len(q.Seat.Players) == 0 || len(q.Seat.Players) > 256 {
			return fmt.Errorf("%w: seat request without players", ErrTicket)
		}
	default:
		return fmt.Errorf("%w: queue op %q", ErrTicket, q.Op)
	}
	if len(q.Claims) > maxBatch || len(q.Assign) > maxBatch || len(q.Matches) > maxBatch || len(q.IDs) > maxBatch {
		return fmt.Errorf("%w: a batch of more than %d", ErrTicket, maxBatch)
	}
	for _, c := range q.Claims {
		if len(c.Tickets) == 0 || len(c.Tickets) > 256 {
			return fmt.Errorf("%w: a claim of %d tickets", ErrTicket, len(c.Tickets))
		}
	}
	return nil
}

func (r *queueReply) validate() error {
	if len(r.Granted) > maxBatch || len(r.Gone) > maxBatch || len(r.Refused) > maxBatch || len(r.Tickets) > 256 {
		return fmt.Errorf("%w: reply too long", ErrTicket)
	}
	return nil
}

// decode reads a message into a new T and checks it; unknown fields are
// ignored, so that a newer process can add some.
func decode[T any, P interface {
	*T
	validate() error
}](b []byte) (*T, error) {
	if len(b) > maxMsg {
		return nil, fmt.Errorf("%w: message of %d bytes", ErrTicket, len(b))
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTicket, err)
	}
	if err := P(v).validate(); err != nil {
		return nil, err
	}
	return v, nil
}
