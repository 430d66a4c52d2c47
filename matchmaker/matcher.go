package matchmaker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config configures a Matcher (and a Service, which runs one).
type Config struct {
	// Modes are the game modes tickets may ask for.
	Modes []Mode
	// Timeout bounds a ticket's wait: past it the ticket is dropped and its
	// player told (ErrTimeout). Default 5 minutes.
	Timeout time.Duration
	// FirstCome matches tickets in the order they came, blind to skill and
	// round trips (parties stay whole, builds apart, and the region is
	// still the one that suits the players best): the baseline the bench
	// measures against, or a choice for a game with too few players to be
	// choosy.
	FirstCome bool
	// MaxScan bounds the tickets looked at to fill one match (default 512).
	MaxScan int
	// MaxTickets bounds the tickets held at once (default 1 << 20): past
	// it a ticket is refused with ErrFull, so that no queue can fill the
	// matchmaker's memory.
	MaxTickets int
	// Name starts the ids of the matches formed (default "m").
	Name string
}

// Site is a place where a match may be played: a cluster node, with its
// region, the builds it serves (empty: any) and the rooms it can still take.
type Site struct {
	Node   string
	Region string
	Builds []string
	Free   int
}

// Match is a match the matchmaker formed.
type Match struct {
	// ID names the match; it is the room's name.
	ID   string `json:"id"`
	Mode string `json:"mode"`
	// Region is where it is to be played, and Node the site picked there
	// (empty when the Matcher was given no sites).
	Region string `json:"region,omitempty"`
	Node   string `json:"node,omitempty"`
	// Builds are the builds its players run, sorted.
	Builds []string `json:"builds,omitempty"`
	// Tickets are the tickets it takes, whole; Teams the players by team
	// (for a backfill, the players joining each team).
	Tickets []Ticket   `json:"tickets"`
	Teams   [][]Player `json:"teams"`
	// WorstRTT is the longest round trip, in ms, of its players to Region
	// (-1: unknown).
	WorstRTT int `json:"worst_rtt_ms"`
	// Backfill is the running room it fills, nil for a new one; its
	// ticket is Tickets[0].
	Backfill *Backfill `json:"backfill,omitempty"`
}

// Matcher forms matches from the tickets it holds, in one process: a
// Service runs one on the cluster, and a server that needs no cluster (the
// demo) may use one alone. It is not safe for concurrent use.
type Matcher struct {
	cfg   Config
	modes map[string]*Mode
	links map[[2]string]bool // open build switches, a < b
	pools map[string]*pool
	byID  map[string]*entry
	seq   uint64
	match uint64
}

// entry is a ticket in a pool.
type entry struct {
	t       Ticket
	mu      float64
	sigma   float64
	seq     uint64
	pool    *pool
	removed bool
	taken   bool // in a match of this pass
}

// pool holds the tickets of one mode and one group of builds that may
// meet.
type pool struct {
	mode  *Mode
	key   string
	byMu  []*entry // sorted by (mu, seq)
	order []*entry // sorted by (Since, seq): the oldest first
	dead  int      // removed entries still in the slices
}

// NewMatcher returns a Matcher of cfg's modes, or ErrTicket for a bad mode.
func NewMatcher(cfg Config) (*Matcher, error) {
	if len(cfg.Modes) == 0 {
		return nil, fmt.Errorf("%w: no mode", ErrTicket)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.MaxScan <= 0 {
		cfg.MaxScan = 512
	}
	if cfg.MaxTickets <= 0 {
		cfg.MaxTickets = 1 << 20
	}
	if cfg.Name == "" {
		cfg.Name = "m"
	}
	m := &Matcher{cfg: cfg, modes: map[string]*Mode{}, links: map[[2]string]bool{}, pools: map[string]*pool{}, byID: map[string]*entry{}}
	for _, md := range cfg.Modes {
		if err := md.validate(); err != nil {
			return nil, err
		}
		if m.modes[md.Name] != nil {
			return nil, fmt.Errorf("%w: mode %s twice", ErrTicket, md.Name)
		}
		d := md.withDefaults()
		m.modes[md.Name] = &d
	}
	return m, nil
}

// Mode returns the mode named name.
func (m *Matcher) Mode(name string) (Mode, bool) {
	md := m.modes[name]
	if md == nil {
		return Mode{}, false
	}
	return *md, true
}

// Len returns the tickets waiting.
func (m *Matcher) Len() int { return len(m.byID) }

// Add queues t (validated against its mode). A zero t.Since is taken as
// now.
func (m *Matcher) Add(t Ticket, now time.Time) error {
	if err := t.validate(); err != nil {
		return err
	}
	md := m.modes[t.Mode]
	if md == nil {
		return fmt.Errorf("%w: no mode %q", ErrTicket, t.Mode)
	}
	if t.size() > md.TeamSize {
		return fmt.Errorf("%w: a party of %d in mode %s, whose teams hold %d", ErrTicket, t.size(), md.Name, md.TeamSize)
	}
	if b := t.Backfill; b != nil && len(b.Open) != md.Teams {
		return fmt.Errorf("%w: a backfill of %d teams in mode %s of %d", ErrTicket, len(b.Open), md.Name, md.Teams)
	}
	if m.byID[t.ID] != nil {
		return fmt.Errorf("%w: %s", ErrDuplicate, t.ID)
	}
	if len(m.byID) >= m.cfg.MaxTickets {
		return fmt.Errorf("%w: %d tickets held", ErrFull, len(m.byID))
	}
	if t.Since.IsZero() || t.Since.After(now) {
		t.Since = now
	}
	m.seq++
	e := &entry{t: t, seq: m.seq}
	e.mu, e.sigma = t.skill()
	m.byID[t.ID] = e
	m.insert(e)
	return nil
}

// insert puts e in the pool of its mode and build group.
func (m *Matcher) insert(e *entry) {
	key := e.t.Mode + "\x00" + m.group(e.t.Build)
	p := m.pools[key]
	if p == nil {
		p = &pool{mode: m.modes[e.t.Mode], key: key}
		m.pools[key] = p
	}
	e.pool = p
	i, _ := slices.BinarySearchFunc(p.byMu, e, byMu)
	p.byMu = slices.Insert(p.byMu, i, e)
	j, _ := slices.BinarySearchFunc(p.order, e, bySince)
	p.order = slices.Insert(p.order, j, e)
}

func byMu(a, b *entry) int {
	if c := cmp.Compare(a.mu, b.mu); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

func bySince(a, b *entry) int {
	if c := a.t.Since.Compare(b.t.Since); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// Has reports whether the ticket id is queued.
func (m *Matcher) Has(id string) bool { return m.byID[id] != nil }

// Remove drops the ticket id (canceled, or taken by a match placed
// elsewhere); it reports whether it was queued.
func (m *Matcher) Remove(id string) bool {
	e := m.byID[id]
	if e == nil {
		return false
	}
	m.drop(e)
	return true
}

func (m *Matcher) drop(e *entry) {
	delete(m.byID, e.t.ID)
	e.removed = true
	e.pool.dead++
}

// OpenBuilds opens the switch that lets players of builds a and b meet (a
// preview build and the live one, once their versions agree); CloseBuilds
// closes it. Tickets already queued move to their new pools.
func (m *Matcher) OpenBuilds(a, b string) { m.setLink(a, b, true) }

// CloseBuilds closes the switch OpenBuilds opened.
func (m *Matcher) CloseBuilds(a, b string) { m.setLink(a, b, false) }

// Switches returns the open switches, each pair sorted, sorted.
func (m *Matcher) Switches() [][2]string {
	out := make([][2]string, 0, len(m.links))
	for l := range m.links {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	return out
}

// SetSwitches replaces the open switches with links.
func (m *Matcher) SetSwitches(links [][2]string) {
	next := map[[2]string]bool{}
	for _, l := range links {
		if l[0] != l[1] {
			next[link(l[0], l[1])] = true
		}
	}
	if maps(next, m.links) {
		return
	}
	m.links = next
	m.regroup()
}

func maps(a, b map[[2]string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func link(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

func (m *Matcher) setLink(a, b string, open bool) {
	if a == b || m.links[link(a, b)] == open {
		return
	}
	if open {
		m.links[link(a, b)] = true
	} else {
		delete(m.links, link(a, b))
	}
	m.regroup()
}

// regroup moves every ticket to the pool of its build group.
func (m *Matcher) regroup() {
	all := make([]*entry, 0, len(m.byID))
	for _, e := range m.byID {
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *entry) int { return cmp.Compare(a.seq, b.seq) })
	m.pools = map[string]*pool{}
	for _, e := range all {
		m.insert(e)
	}
}

// group names the builds that may meet build.
func (m *Matcher) group(build string) string { return groupOf(m.links, build) }

// groupOf names the builds that the open switches links join to build:
// sorted and joined by ','.
func groupOf(links map[[2]string]bool, build string) string {
	if len(links) == 0 {
		return build
	}
	seen := []string{build}
	for i := 0; i < len(seen); i++ {
		for l := range links {
			for k, other := range [2]string{l[1], l[0]} {
				if l[k] == seen[i] && !slices.Contains(seen, other) {
					seen = append(seen, other)
				}
			}
		}
	}
	slices.Sort(seen)
	return strings.Join(seen, ",")
}

// GroupOf returns the name of the pool a build's tickets wait in: the
// builds it may meet, sorted and joined by ','.
func (m *Matcher) GroupOf(build string) string { return m.group(build) }

// pass is one Match call's view of where matches may go.
type pass struct {
	now     time.Time
	sites   []Site
	regions []string // the sites' regions, indexed by bit
	placed  bool     // sites were given: matches need one
	scratch []*entry
	masks   []uint64
}

// Match forms the matches it can from the tickets queued, at now, placing
// each on one of sites (whose Free it decrements); nil sites: matches go
// nowhere in particular (Region and Node empty). It returns the matches,
// whose tickets it no longer holds, and the tickets that waited past
// Config.Timeout, dropped.
func (m *Matcher) Match(now time.Time, sites []Site) (matches []Match, expired []Ticket) {
	ps := &pass{now: now, sites: sites, placed: sites != nil}
	for _, s := range sites {
		if !slices.Contains(ps.regions, s.Region) && len(ps.regions) < 64 {
			ps.regions = append(ps.regions, s.Region)
		}
	}
	keys := make([]string, 0, len(m.pools))
	for k := range m.pools {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := m.pools[k]
		p.compact()
		for _, e := range p.order {
			if !e.removed && now.Sub(e.t.Since) > m.cfg.Timeout {
				expired = append(expired, e.t)
				m.drop(e)
			}
		}
		for _, e := range p.order {
			if e.removed || e.taken {
				continue
			}
			if mt, ok := m.fill(ps, p, e); ok {
				for i := range mt.Tickets {
					m.drop(m.byID[mt.Tickets[i].ID])
				}
				matches = append(matches, mt)
			}
		}
		for _, e := range p.order {
			e.taken = false
		}
		p.compact()
		if len(p.order) == 0 {
			delete(m.pools, k)
		}
	}
	return matches, expired
}

// compact drops the removed entries from p's slices.
func (p *pool) compact() {
	if p.dead == 0 {
		return
	}
	gone := func(e *entry) bool { return e.removed }
	p.byMu = slices.DeleteFunc(p.byMu, gone)
	p.order = slices.DeleteFunc(p.order, gone)
	p.dead = 0
}

// reach returns the regions (bits of ps.regions) e accepts after its wait:
// those whose round trip is within its mode's limit (all, for a ticket
// that measured none, or in a first-come pass).
func (m *Matcher) reach(ps *pass, e *entry) uint64 {
	all := uint64(1)<<len(ps.regions) - 1
	if len(e.t.RTT) == 0 || m.cfg.FirstCome {
		return all
	}
	limit := e.pool.mode.rtt(ps.now.Sub(e.t.Since))
	var mask uint64
	for i, r := range ps.regions {
		if ms, ok := e.t.RTT[r]; ok && ms <= limit {
			mask |= 1 << i
		}
	}
	return mask
}

// rttTo returns e's round trip to region (0 for a ticket that measured
// none, -1 for one out of reach).
func rttTo(e *entry, region string) int {
	if len(e.t.RTT) == 0 {
		return 0
	}
	if ms, ok := e.t.RTT[region]; ok {
		return ms
	}
	return -1
}

// free returns the regions (bits) with a site that has room for a match of
// builds.
func (ps *pass) free(builds []string) uint64 {
	var mask uint64
	for _, s := range ps.sites {
		if s.Free > 0 && serves(s.Builds, builds) {
			if i := slices.Index(ps.regions, s.Region); i >= 0 {
				mask |= 1 << i
			}
		}
	}
	return mask
}

func serves(have, want []string) bool {
	if len(have) == 0 {
		return true
	}
	for _, b := range want {
		if b != "" && !slices.Contains(have, b) {
			return false
		}
	}
	return true
}

// fill tries to form a match around anchor, the oldest ticket not yet
// taken in this pass.
func (m *Matcher) fill(ps *pass, p *pool, anchor *entry) (Match, bool) {
	md := p.mode
	need := md.Teams * md.TeamSize
	var open []int // a backfill's seats left per team
	mask := uint64(math.MaxUint64)
	if ps.placed {
		mask = m.reach(ps, anchor)
	}
	if b := anchor.t.Backfill; b != nil {
		open = slices.Clone(b.Open)
		need = 0
		for _, o := range open {
			need += o
		}
		if ps.placed {
			i := slices.Index(ps.regions, b.Region)
			if i < 0 {
				mask = 0
			} else {
				mask = 1 << i
			}
		}
	} else if ps.placed {
		mask &= ps.free(builds(anchor.t.Build))
	}
	if mask == 0 {
		return Match{}, false
	}
	chosen := append(ps.scratch[:0], anchor)
	masks := append(ps.masks[:0], mask)
	total := anchor.size()
	wait := ps.now.Sub(anchor.t.Since)
	tol, utol := md.skill(wait), md.uncertainty(wait)
	var teams [][]int
	try := func(c *entry) bool {
		if c.removed || c.taken || c == anchor || c.t.Backfill != nil || c.size() > md.TeamSize || total+c.size() > need {
			return false
		}
		if !m.cfg.FirstCome && math.Abs(c.sigma-anchor.sigma) > utol {
			return false
		}
		cm := mask
		if ps.placed {
			cm &= m.reach(ps, c)
			if cm == 0 {
				return false
			}
		}
		if open != nil {
			best := -1
			for i, o := range open {
				if o >= c.size() && (best < 0 || o > open[best]) {
					best = i
				}
			}
			if best < 0 {
				return false
			}
			open[best] -= c.size()
		}
		chosen = append(chosen, c)
		masks = append(masks, cm)
		mask, total = cm, total+c.size()
		if open == nil && total == need {
			if teams = assign(chosen, md); teams == nil || !m.cfg.FirstCome && md.TeamSize > 1 && imbalance(chosen, teams) > tol/3 {
				teams = nil
				chosen, masks = chosen[:len(chosen)-1], masks[:len(masks)-1]
				mask, total = masks[len(masks)-1], total-c.size()
			}
		}
		return true
	}
	scanned := 0
	if m.cfg.FirstCome {
		for _, c := range p.order {
			if total == need || scanned >= m.cfg.MaxScan {
				break
			}
			if try(c) {
				scanned++
			}
		}
	} else {
		i, _ := slices.BinarySearchFunc(p.byMu, anchor, byMu)
		lo, hi := i-1, i+1
		for total < need && scanned < m.cfg.MaxScan {
			var c *entry
			dlo, dhi := math.Inf(1), math.Inf(1)
			if lo >= 0 {
				dlo = anchor.mu - p.byMu[lo].mu
			}
			if hi < len(p.byMu) {
				dhi = p.byMu[hi].mu - anchor.mu
			}
			switch {
			case min(dlo, dhi) > tol:
			case dlo <= dhi:
				c, lo = p.byMu[lo], lo-1
			default:
				c, hi = p.byMu[hi], hi+1
			}
			if c == nil {
				break
			}
			scanned++
			try(c)
		}
	}
	ps.scratch, ps.masks = chosen[:0], masks[:0]
	if open == nil && (total < need || teams == nil) || open != nil && len(chosen) < 2 {
		return Match{}, false
	}
	return m.form(ps, md, anchor, chosen, teams, mask), true
}

// builds returns the build list of one build ("" is none).
func builds(b string) []string {
	if b == "" {
		return nil
	}
	return []string{b}
}

// form turns the tickets chosen into a match placed in the best region of
// mask.
func (m *Matcher) form(ps *pass, md *Mode, anchor *entry, chosen []*entry, teams [][]int, mask uint64) Match {
	m.match++
	mt := Match{ID: m.cfg.Name + "-" + strconv.FormatUint(m.match, 36), Mode: md.Name, WorstRTT: -1,
		Tickets: make([]Ticket, len(chosen))}
	for i, e := range chosen {
		e.taken = true
		mt.Tickets[i] = e.t
		if b := e.t.Build; b != "" && !slices.Contains(mt.Builds, b) {
			mt.Builds = append(mt.Builds, b)
		}
	}
	slices.Sort(mt.Builds)
	if b := anchor.t.Backfill; b != nil {
		mt.Backfill = b
		mt.Teams = make([][]Player, len(b.Open))
		open := slices.Clone(b.Open)
		for _, e := range chosen[1:] {
			best := -1
			for i, o := range open {
				if o >= e.size() && (best < 0 || o > open[best]) {
					best = i
				}
			}
			open[best] -= e.size()
			mt.Teams[best] = append(mt.Teams[best], e.t.Players...)
		}
	} else {
		mt.Teams = make([][]Player, len(teams))
		for i, team := range teams {
			for _, k := range team {
				mt.Teams[i] = append(mt.Teams[i], chosen[k].t.Players...)
			}
		}
	}
	if !ps.placed {
		return mt
	}
	// The region whose worst round trip is the shortest.
	best, worstBest := -1, math.MaxInt
	for i, r := range ps.regions {
		if mask&(1<<i) == 0 {
			continue
		}
		worst := 0
		for _, e := range chosen {
			if e.t.Backfill == nil {
				worst = max(worst, rttTo(e, r))
			}
		}
		if worst < worstBest {
			best, worstBest = i, worst
		}
	}
	mt.Region, mt.WorstRTT = ps.regions[best], worstBest
	if mt.Backfill != nil {
		mt.Node = mt.Backfill.Node
		return mt
	}
	// The site of that region with the most room.
	site := -1
	for i, s := range ps.sites {
		if s.Region == mt.Region && s.Free > 0 && serves(s.Builds, mt.Builds) && (site < 0 || s.Free > ps.sites[site].Free) {
			site = i
		}
	}
	if site >= 0 {
		ps.sites[site].Free--
		mt.Node = ps.sites[site].Node
	}
	return mt
}

// size returns the players e's ticket brings.
func (e *entry) size() int { return e.t.size() }
