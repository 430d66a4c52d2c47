package matchmaker

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Bounds on tickets and modes (SPEC.md §12).
const (
	// MaxIDLen bounds a ticket id, a player id and a mode's name in bytes.
	MaxIDLen = 64
	// MaxParty bounds the players of one ticket.
	MaxParty = 16
	// MaxTeams bounds a mode's teams, and MaxTeamSize a team's players.
	MaxTeams, MaxTeamSize = 64, 16
	// MaxRegions bounds the regions a ticket measured.
	MaxRegions = 32
	// maxBuildLen bounds a build's or a region's name (cluster.MaxBuildLen).
	maxBuildLen = 64
	// maxRTT is the largest round trip a ticket may report, in ms.
	maxRTT = 10000
)

// Errors of the matchmaker; test with errors.Is.
var (
	// ErrTicket: a ticket or a mode breaks the bounds of SPEC.md §12.
	ErrTicket = errors.New("matchmaker: invalid ticket")
	// ErrDuplicate: a ticket with this id is already queued.
	ErrDuplicate = errors.New("matchmaker: ticket already queued")
	// ErrTimeout: the ticket waited Config.Timeout without a match.
	ErrTimeout = errors.New("matchmaker: no match in time")
	// ErrCanceled: the ticket was canceled before it was matched.
	ErrCanceled = errors.New("matchmaker: ticket canceled")
	// ErrFull: the matchmaker holds Config.MaxTickets already.
	ErrFull = errors.New("matchmaker: full")
	// ErrUnavailable: no matchmaker is running, or none took the ticket.
	ErrUnavailable = errors.New("matchmaker: no matchmaker")
)

// Player is one member of a ticket: a party lists several.
type Player struct {
	ID     string `json:"id"`
	Rating Rating `json:"rating"`
}

// Ticket asks for a match for one player, or for a party that plays
// together on one team.
type Ticket struct {
	// ID names the ticket, 1..MaxIDLen bytes; a Queue fills it in.
	ID string `json:"id"`
	// Players are the party, 1..MaxParty, at most the mode's team size.
	Players []Player `json:"players"`
	// Mode names the game mode (Config.Modes).
	Mode string `json:"mode"`
	// Build is the game build (client version) the players run; a match
	// mixes builds only where the operator opened a switch between them
	// (OpenBuilds). Empty: a build of its own, "".
	Build string `json:"build,omitempty"`
	// RTT is the round trip, in milliseconds, the client measured to each
	// region it can reach (the regions of the cluster's nodes). A region
	// it does not list is out of its reach; no RTT at all: any region.
	RTT map[string]int `json:"rtt_ms,omitempty"`
	// Since is when the ticket first queued (a Queue sets it): waiting
	// widens what a ticket accepts, and a ticket queued again after a
	// matchmaker died keeps its place.
	Since time.Time `json:"since"`
	// Backfill, when set, asks for players for a running room's open
	// seats instead: Players is empty.
	Backfill *Backfill `json:"backfill,omitempty"`
}

// Backfill describes a running room that wants players.
type Backfill struct {
	// Room names the room and Node the cluster node that holds it
	// (Region its node's region); URL is where its players dial.
	Room   string `json:"room"`
	Node   string `json:"node,omitempty"`
	URL    string `json:"url,omitempty"`
	Region string `json:"region,omitempty"`
	// Teams are the ratings of the players in the room, by team, and
	// Open the seats open on each team (len(Open) == the mode's teams).
	Teams [][]Rating `json:"teams"`
	Open  []int      `json:"open"`
}

// size returns the players a ticket brings.
func (t *Ticket) size() int { return len(t.Players) }

// skill returns the ticket's mean Mu and mean Sigma for matching: its
// players' (a backfill's: its room's; a new player's for an empty room).
func (t *Ticket) skill() (mu, sigma float64) {
	n := 0
	add := func(r Rating) {
		mu += r.Mu
		sigma += r.Sigma
		n++
	}
	if t.Backfill != nil {
		for _, team := range t.Backfill.Teams {
			for _, r := range team {
				add(r)
			}
		}
	} else {
		for _, p := range t.Players {
			add(p.Rating)
		}
	}
	if n == 0 {
		r := NewRating()
		return r.Mu, r.Sigma
	}
	return mu / float64(n), sigma / float64(n)
}

// checkName checks an id or a mode's name.
func checkName(what, s string) error {
	if len(s) == 0 || len(s) > MaxIDLen || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s must be 1 to %d bytes of UTF-8", ErrTicket, what, MaxIDLen)
	}
	return nil
}

// checkToken checks a build's or a region's name: 1..64 bytes of
// printable ASCII, no space and no comma (as engine.Config.Builds).
func checkToken(what, s string) error {
	if len(s) == 0 || len(s) > maxBuildLen {
		return fmt.Errorf("%w: %s %q must be 1 to %d bytes", ErrTicket, what, s, maxBuildLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || c == ',' {
			return fmt.Errorf("%w: %s %q: printable ASCII only, no space or comma", ErrTicket, what, s)
		}
	}
	return nil
}

// checkRating checks a rating a ticket carries.
func checkRating(r Rating) error {
	if math.IsNaN(r.Mu) || math.IsInf(r.Mu, 0) || math.Abs(r.Mu) > 1e6 || !(r.Sigma > 0) || r.Sigma > 1e6 {
		return fmt.Errorf("%w: rating %v: want a finite Mu and 0 < Sigma <= 1e6", ErrTicket, r)
	}
	return nil
}

// validate checks a ticket against the bounds (not against a mode).
func (t *Ticket) validate() error {
	if err := checkName("ticket id", t.ID); err != nil {
		return err
	}
	if err := checkName("mode", t.Mode); err != nil {
		return err
	}
	if t.Build != "" {
		if err := checkToken("build", t.Build); err != nil {
			return err
		}
	}
	if len(t.RTT) > MaxRegions {
		return fmt.Errorf("%w: %d regions, at most %d", ErrTicket, len(t.RTT), MaxRegions)
	}
	for r, ms := range t.RTT {
		if err := checkToken("region", r); err != nil {
			return err
		}
		if ms < 0 || ms > maxRTT {
			return fmt.Errorf("%w: round trip of %d ms to %s, want 0..%d", ErrTicket, ms, r, maxRTT)
		}
	}
	if b := t.Backfill; b != nil {
		if len(t.Players) != 0 {
			return fmt.Errorf("%w: a backfill ticket brings no players", ErrTicket)
		}
		if err := checkName("room", b.Room); err != nil {
			return err
		}
		if len(b.Open) == 0 || len(b.Open) > MaxTeams || len(b.Teams) > MaxTeams {
			return fmt.Errorf("%w: backfill of %d teams", ErrTicket, len(b.Open))
		}
		open := 0
		for _, o := range b.Open {
			if o < 0 || o > MaxTeamSize {
				return fmt.Errorf("%w: %d open seats on a team", ErrTicket, o)
			}
			open += o
		}
		if open == 0 {
			return fmt.Errorf("%w: a backfill with no open seat", ErrTicket)
		}
		for _, team := range b.Teams {
			if len(team) > MaxTeamSize {
				return fmt.Errorf("%w: a team of %d", ErrTicket, len(team))
			}
			for _, r := range team {
				if err := checkRating(r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if len(t.Players) == 0 || len(t.Players) > MaxParty {
		return fmt.Errorf("%w: %d players, want 1 to %d", ErrTicket, len(t.Players), MaxParty)
	}
	for i, p := range t.Players {
		if err := checkName("player id", p.ID); err != nil {
			return err
		}
		if err := checkRating(p.Rating); err != nil {
			return err
		}
		for _, q := range t.Players[:i] {
			if q.ID == p.ID {
				return fmt.Errorf("%w: player %q twice in one party", ErrTicket, p.ID)
			}
		}
	}
	return nil
}

// Mode describes a game mode: the shape of its matches and how choosy its
// matching is. Tolerances widen with a ticket's wait, from the first
// figure by the widening each second, up to the cap. Its JSON is a
// config file's mode ("rtt_ms": 80, MarshalJSON), the same in Go and in
// tongbu serve's "matchmaker" object.
type Mode struct {
	// Name names the mode in tickets (1..MaxIDLen bytes).
	Name string
	// Teams and TeamSize shape a match: 2 and 1 for a duel, 2 and 5 for
	// 5v5, N and 1 for a free-for-all of N. A party plays on one team, so
	// it has at most TeamSize players.
	Teams    int
	TeamSize int
	// Skill is how far, in Mu, the players of a match may stand from the
	// one who waited longest (default Beta: one game's spread of
	// performance); SkillWiden is added each second it waits (default
	// Beta/4), up to MaxSkill (default 6 Beta: a player far from every
	// other still plays, after about 20 s).
	Skill      float64
	SkillWiden float64
	MaxSkill   float64
	// Uncertainty is how far, in Sigma, the players of a match may stand
	// from the one who waited longest (default Beta/2), widening by
	// UncertaintyWiden a second (default Beta/8): new players, whose
	// ratings say little yet, meet new players first, so that the
	// surprises their true skill holds fall on few matches.
	Uncertainty      float64
	UncertaintyWiden float64
	// RTT is the longest round trip a player accepts to the match's
	// region at first (default 80 ms); RTTWiden is added each second it
	// waits (default 20 ms), up to MaxRTT (default 250 ms).
	RTT      time.Duration
	RTTWiden time.Duration
	MaxRTT   time.Duration
	// Room is the configuration of the room a match of this mode is
	// created with, passed to the node that places it as
	// cluster.RoomRequest.Config and read by that node's Host: for a
	// tongbu serve node, a room entry of its config file without the name
	// (the match names the room), for example {"players": 10, "hz": 30};
	// `tongbu serve -h` lists the keys. Empty: the
	// Host's default room for the match's players.
	Room json.RawMessage
}

// withDefaults returns m with its zero tolerances set.
func (m Mode) withDefaults() Mode {
	if m.Skill <= 0 {
		m.Skill = Beta
	}
	if m.SkillWiden <= 0 {
		m.SkillWiden = Beta / 4
	}
	if m.MaxSkill <= 0 {
		m.MaxSkill = 6 * Beta
	}
	if m.Uncertainty <= 0 {
		m.Uncertainty = Beta / 2
	}
	if m.UncertaintyWiden <= 0 {
		m.UncertaintyWiden = Beta / 8
	}
	if m.RTT <= 0 {
		m.RTT = 80 * time.Millisecond
	}
	if m.RTTWiden <= 0 {
		m.RTTWiden = 20 * time.Millisecond
	}
	if m.MaxRTT <= 0 {
		m.MaxRTT = 250 * time.Millisecond
	}
	m.MaxSkill = max(m.MaxSkill, m.Skill)
	m.MaxRTT = max(m.MaxRTT, m.RTT)
	return m
}

func (m *Mode) validate() error {
	if err := checkName("mode", m.Name); err != nil {
		return err
	}
	if m.Teams < 2 || m.Teams > MaxTeams || m.TeamSize < 1 || m.TeamSize > MaxTeamSize {
		return fmt.Errorf("%w: mode %s: %d teams of %d, want 2..%d teams of 1..%d", ErrTicket, m.Name, m.Teams, m.TeamSize, MaxTeams, MaxTeamSize)
	}
	if m.Teams*m.TeamSize > 256 {
		return fmt.Errorf("%w: mode %s: %d players a match, at most 256", ErrTicket, m.Name, m.Teams*m.TeamSize)
	}
	if math.IsNaN(m.Skill+m.SkillWiden+m.MaxSkill+m.Uncertainty+m.UncertaintyWiden) || m.Uncertainty < 0 || m.UncertaintyWiden < 0 || m.Skill < 0 || m.SkillWiden < 0 || m.MaxSkill < 0 || m.RTT < 0 || m.RTTWiden < 0 || m.MaxRTT < 0 {
		return fmt.Errorf("%w: mode %s: negative tolerance", ErrTicket, m.Name)
	}
	return nil
}

// skill returns the mode's skill tolerance after waiting w.
func (m *Mode) skill(w time.Duration) float64 {
	return min(m.Skill+m.SkillWiden*w.Seconds(), m.MaxSkill)
}

// uncertainty returns the mode's tolerance in Sigma after waiting w.
func (m *Mode) uncertainty(w time.Duration) float64 {
	return m.Uncertainty + m.UncertaintyWiden*w.Seconds()
}

// rtt returns the longest round trip, in ms, a ticket accepts after
// waiting w.
func (m *Mode) rtt(w time.Duration) int {
	d := min(m.RTT+time.Duration(float64(m.RTTWiden)*w.Seconds()), m.MaxRTT)
	return int(d / time.Millisecond)
}
