package replica

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Publisher defaults.
const (
	DefaultRing              = 64
	DefaultMaxMessage        = 64 << 10
	DefaultMaxPayload        = 32 << 20
	DefaultCommitInterval    = 100 * time.Millisecond
	DefaultHeartbeatInterval = time.Second
	// DefaultMaxRecords caps the records of one collection a subscriber or a
	// loaded file will take.
	DefaultMaxRecords = 1 << 20
)

// PublisherConfig configures a Publisher. Zero fields take the defaults.
type PublisherConfig struct {
	// Name names the publisher in bus subjects (replica.<Name>.*): 1 to 64
	// of [A-Za-z0-9_-]. Required.
	Name string
	// Path is the file that keeps the records, versions and delta rings
	// across restarts. Empty means none: every start is a new history
	// (epoch), and subscribers take a full snapshot from it.
	Path string
	// Ring is K, the deltas kept per collection (default DefaultRing). The
	// delta of version v sits in slot v mod K.
	Ring int
	// MaxMessage caps one bus message in bytes (default DefaultMaxMessage);
	// larger messages are split with codec framing.
	MaxMessage int
	// MaxPayload caps one logical message before splitting, compressed or
	// not (default DefaultMaxPayload). Subscribers must allow at least as
	// much.
	MaxPayload int
	// MaxRecords caps the records of one collection read from the file
	// (default DefaultMaxRecords).
	MaxRecords int
	// CommitInterval is how often Tick closes a delta of the pending
	// changes (default DefaultCommitInterval).
	CommitInterval time.Duration
	// HeartbeatInterval is how often Tick announces every collection's
	// version, so that a subscriber that lost the last delta learns of it
	// (default DefaultHeartbeatInterval).
	HeartbeatInterval time.Duration
	// Logger receives warnings about dropped input and file trouble
	// (default slog.Default()).
	Logger *slog.Logger
}

func (c PublisherConfig) withDefaults() (PublisherConfig, error) {
	if err := checkName("publisher", c.Name); err != nil {
		return c, err
	}
	if c.Ring <= 0 {
		c.Ring = DefaultRing
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultMaxMessage
	}
	if c.MaxMessage < 64 {
		return c, fmt.Errorf("%w: MaxMessage %d leaves no room for a part", ErrConfig, c.MaxMessage)
	}
	if c.MaxPayload <= 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.MaxRecords <= 0 {
		c.MaxRecords = DefaultMaxRecords
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// PublisherStats counts what a Publisher did.
type PublisherStats struct {
	Deltas       uint64 // deltas closed
	Fulls        uint64 // full snapshots generated
	Reports      uint64 // reports answered
	SyncMessages uint64 // sync messages sent (before splitting)
	Packets      uint64 // bus messages published
	Bytes        uint64 // bytes published
	Dropped      uint64 // reports dropped as malformed, foreign or impossible
	Impossible   uint64 // reports of a version ahead of the publisher
	EpochChanges uint64 // new histories started after a failed save
	FileErrors   uint64 // failed loads and saves
}

// Publisher is the seed's world server: it owns typed collections of
// records, closes their pending changes into numbered deltas, keeps the
// latest full snapshot and a ring of the last K deltas of each, answers
// subscribers' version reports, and persists all of it so that a restart
// continues the same history. It is safe for concurrent use.
type Publisher struct {
	mu      sync.Mutex
	bus     Bus
	cfg     PublisherConfig
	log     *slog.Logger
	colls   []*pubColl
	schema  uint32
	epoch   uint64
	started bool
	closed  bool
	cancel  func()

	split      codec.Splitter
	bulk       []byte // scratch for sync bodies
	msg        []byte // scratch for encoded messages
	lastCommit time.Time
	lastHeads  time.Time
	stats      PublisherStats
}

type pubColl struct {
	name    string
	schema  string
	t       sourceTable
	ver     uint64
	ring    []ringSlot // K slots; version v in slot v mod K
	n       int        // deltas held: versions ver-n+1 .. ver
	hasFull bool
	fullVer uint64
	full    []byte // full body at fullVer
}

type ringSlot struct {
	ver  uint64
	body []byte
}

// NewPublisher returns a Publisher that talks over bus. Register its
// collections with NewSource, then call Start.
func NewPublisher(bus Bus, cfg PublisherConfig) (*Publisher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if bus == nil {
		return nil, fmt.Errorf("%w: nil bus", ErrConfig)
	}
	maxParts := min((cfg.MaxPayload+cfg.MaxMessage-1)/(cfg.MaxMessage/2)+1, codec.MaxPartsLimit)
	return &Publisher{
		bus:   bus,
		cfg:   cfg,
		log:   cfg.Logger,
		split: codec.Splitter{Limit: cfg.MaxMessage, MaxParts: maxParts},
	}, nil
}

// Start loads the file (a missing or unusable one starts a new history, the
// trouble logged and counted), subscribes to reports and announces the
// versions. now is the time of the call, for Tick's intervals.
func (p *Publisher) Start(now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.started {
		return fmt.Errorf("%w: Start called twice", ErrConfig)
	}
	if len(p.colls) == 0 {
		return fmt.Errorf("%w: no collections", ErrConfig)
	}
	p.started = true
	names, schemas := make([]string, len(p.colls)), make([]string, len(p.colls))
	for i, c := range p.colls {
		names[i], schemas[i] = c.name, c.schema
	}
	p.schema = schemaHash(names, schemas)
	if p.cfg.Path != "" {
		if err := p.load(); err != nil {
			p.stats.FileErrors++
			p.log.Warn("replica: publisher starts a new history", "publisher", p.cfg.Name, "path", p.cfg.Path, "err", err)
			for _, c := range p.colls {
				c.t.loadFull(codec.NewReader([]byte{0}), 0) // empty
				c.ver, c.n, c.hasFull, c.full = 0, 0, false, nil
			}
			p.epoch = 0
		}
	}
	if p.epoch == 0 {
		p.epoch = newEpoch()
		if p.cfg.Path != "" {
			p.save() // the new epoch must be on disk before anyone sees it
		}
	}
	cancel, err := p.bus.Subscribe(reportSubject(p.cfg.Name), p.onReport)
	if err != nil {
		p.started = false
		return fmt.Errorf("replica: subscribe to reports: %w", err)
	}
	p.cancel = cancel
	p.lastCommit, p.lastHeads = now, now
	p.sendHeads()
	return nil
}

func newEpoch() uint64 {
	for {
		if e := rand.Uint64(); e != 0 {
			return e
		}
	}
}

// Tick closes a delta of the pending changes when CommitInterval has
// passed since the last, and announces the versions when
// HeartbeatInterval has. It returns the error of a failed save (the
// publisher has then started a new history and goes on).
func (p *Publisher) Tick(now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started || p.closed {
		return ErrClosed
	}
	var err error
	if now.Sub(p.lastCommit) >= p.cfg.CommitInterval {
		p.lastCommit = now
		err = p.commit(nil)
	}
	if now.Sub(p.lastHeads) >= p.cfg.HeartbeatInterval {
		p.lastHeads = now
		p.sendHeads()
	}
	return err
}

// Commit closes a delta of the pending changes of every collection that
// has any, saves the file, and publishes the deltas. It returns the error
// of a failed save (the publisher has then started a new history and goes
// on).
func (p *Publisher) Commit() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started || p.closed {
		return ErrClosed
	}
	return p.commit(nil)
}

// commit closes deltas for only (or every collection when nil), saves the
// file before anyone sees the new versions, and publishes them.
func (p *Publisher) commit(only *pubColl) error {
	var closed []*pubColl
	for _, c := range p.colls {
		if only != nil && c != only || !c.t.hasPending() {
			continue
		}
		var w codec.Writer
		if !c.t.closeDelta(&w) {
			continue // every pending change undid itself
		}
		c.ver++
		c.ring[c.ver%uint64(len(c.ring))] = ringSlot{ver: c.ver, body: w.Bytes()}
		c.n = min(c.n+1, len(c.ring))
		p.stats.Deltas++
		closed = append(closed, c)
	}
	if len(closed) == 0 {
		return nil
	}
	var err error
	if p.cfg.Path != "" {
		err = p.save()
	}
	for _, c := range closed {
		p.sendSync(dataSubject(p.cfg.Name), &syncMsg{collection: p.index(c), first: c.ver, deltas: [][]byte{c.ring[c.ver%uint64(len(c.ring))].body}})
	}
	return err
}

func (p *Publisher) index(c *pubColl) int { return slices.Index(p.colls, c) }

// save writes the file. On failure the publisher starts a new history:
// the file on disk still holds the old epoch at an older version, and
// subscribers must not mix the two.
func (p *Publisher) save() error {
	err := writeFileAtomic(p.cfg.Path, sealFile(kindPub, p.encodeFile()))
	if err == nil {
		return nil
	}
	p.stats.FileErrors++
	p.stats.EpochChanges++
	p.epoch = newEpoch()
	p.log.Warn("replica: publisher save failed; new history", "publisher", p.cfg.Name, "path", p.cfg.Path, "err", err)
	return fmt.Errorf("replica: save %s: %w", p.cfg.Path, err)
}

// encodeFile: schema, epoch, collection count, then per collection its
// name, version, full body of its records, delta count and the deltas
// oldest first.
func (p *Publisher) encodeFile() []byte {
	b := binary.AppendUvarint(nil, uint64(p.schema))
	b = binary.AppendUvarint(b, p.epoch)
	b = binary.AppendUvarint(b, uint64(len(p.colls)))
	for _, c := range p.colls {
		b = appendBytes(b, []byte(c.name))
		b = binary.AppendUvarint(b, c.ver)
		var w codec.Writer
		c.t.encodeFull(&w)
		b = appendBytes(b, w.Bytes())
		b = binary.AppendUvarint(b, uint64(c.n))
		for v := c.ver - uint64(c.n) + 1; v <= c.ver && c.n > 0; v++ {
			b = appendBytes(b, c.ring[v%uint64(len(c.ring))].body)
		}
	}
	return b
}

func (p *Publisher) load() error {
	body, err := readFile(p.cfg.Path, kindPub)
	if err != nil || body == nil {
		return err
	}
	return p.loadBody(body)
}

// loadBody loads a file's body (opened and checked by readFile).
func (p *Publisher) loadBody(body []byte) error {
	r := &fileReader{b: body}
	schema, epoch := r.uvarint("schema"), r.uvarint("epoch")
	n := r.count("collections", maxCollections)
	if r.err != nil {
		return r.err
	}
	if schema != uint64(p.schema) || n != len(p.colls) {
		return fmt.Errorf("%w: file for schema %08x with %d collections, this publisher has %08x with %d", ErrSchema, schema, n, p.schema, len(p.colls))
	}
	for _, c := range p.colls {
		name := r.bytes("name")
		ver := r.uvarint("version")
		state := r.bytes("records")
		nd := r.count("deltas", len(c.ring))
		if r.err != nil {
			return r.err
		}
		if string(name) != c.name || ver > maxVersion || uint64(nd) > ver {
			return fmt.Errorf("%w: collection %q at version %d with %d deltas", ErrBadFile, name, ver, nd)
		}
		if err := c.t.loadFull(codec.NewReader(state), p.cfg.MaxRecords); err != nil {
			return fmt.Errorf("%w: collection %q: %v", ErrBadFile, c.name, err)
		}
		c.ver, c.n, c.hasFull, c.full = ver, nd, false, nil
		clear(c.ring)
		for v := ver - uint64(nd) + 1; v <= ver && nd > 0; v++ {
			d := r.bytes("delta")
			if r.err != nil {
				return r.err
			}
			c.ring[v%uint64(len(c.ring))] = ringSlot{ver: v, body: d}
		}
	}
	if err := r.done(); err != nil {
		return err
	}
	if epoch == 0 {
		return fmt.Errorf("%w: epoch 0", ErrBadFile)
	}
	p.epoch = epoch
	return nil
}

// sendHeads announces the epoch and every collection's version.
func (p *Publisher) sendHeads() {
	h := heads{schema: p.schema, epoch: p.epoch, versions: make([]uint64, len(p.colls))}
	for i, c := range p.colls {
		h.versions[i] = c.ver
	}
	p.msg = encodeHeads(p.msg, h)
	p.publish(dataSubject(p.cfg.Name), typeHeads, p.msg)
}

func (p *Publisher) sendSync(subject string, m *syncMsg) {
	m.schema, m.epoch = p.schema, p.epoch
	p.msg, p.bulk = encodeSync(p.msg, m, p.bulk)
	p.stats.SyncMessages++
	p.publish(subject, typeSync, p.msg)
}

func (p *Publisher) publish(subject string, typ uint8, payload []byte) {
	if len(payload) > p.cfg.MaxPayload {
		p.log.Warn("replica: message over MaxPayload not sent", "publisher", p.cfg.Name, "bytes", len(payload), "cap", p.cfg.MaxPayload)
		return
	}
	err := p.split.Split(typ, payload, func(packet []byte) error {
		p.stats.Packets++
		p.stats.Bytes += uint64(len(packet))
		return p.bus.Publish(subject, packet)
	})
	if err != nil {
		p.log.Warn("replica: publish failed", "publisher", p.cfg.Name, "subject", subject, "err", err)
	}
}

// onReport handles a subscriber's version report (bus goroutine).
func (p *Publisher) onReport(msg []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if err := p.handleReport(msg); err != nil {
		p.stats.Dropped++
		p.log.Warn("replica: report dropped", "publisher", p.cfg.Name, "err", err)
	}
}

func (p *Publisher) handleReport(msg []byte) error {
	f, n, err := codec.ReadFrame(msg)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if n != len(msg) || f.Split || f.Type != typeReport {
		return fmt.Errorf("%w: report frame (type %d, split %v, %d of %d bytes)", ErrMalformed, f.Type, f.Split, n, len(msg))
	}
	rp, err := decodeReport(f.Payload, p.schema, len(p.colls))
	if err != nil {
		return err
	}
	p.stats.Reports++
	var impossible error
	for i, c := range p.colls {
		if err := p.answer(rp.id, i, c, rp.held[i]); err != nil && impossible == nil {
			impossible = err
		}
	}
	return impossible
}

// answer implements the publisher's half of the version protocol for one
// collection of one report.
func (p *Publisher) answer(sub string, i int, c *pubColl, h held) error {
	to := directSubject(p.cfg.Name, sub)
	r := h.version
	if r >= 0 && h.epoch != p.epoch {
		r = -1 // a copy from another history is no copy
	}
	switch {
	case r > int64(c.ver):
		// Impossible: the subscriber claims a version this history has not
		// reached. Send a snapshot it must load whatever it holds.
		p.stats.Impossible++
		p.sendFull(to, i, c, true)
		return fmt.Errorf("%w: %q reports %q at version %d, publisher at %d", ErrImpossibleVersion, sub, c.name, r, c.ver)
	case r == -1 && c.hasFull && p.chains(c, c.fullVer):
		// Empty subscriber, and the held snapshot chains onto the ring:
		// the snapshot and the deltas after it.
		p.sendFrom(to, i, c, true, c.fullVer)
	case r == -1:
		// Empty subscriber, and no snapshot or one the ring has outrun: a
		// new snapshot.
		p.sendFull(to, i, c, false)
	case uint64(r) == c.ver:
		// Up to date.
	case !p.chains(c, uint64(r)):
		// A delta after r has been overwritten in the ring: a new snapshot.
		p.sendFull(to, i, c, false)
	default:
		// The ring holds every delta after r.
		p.sendFrom(to, i, c, false, uint64(r))
	}
	return nil
}

// chains reports whether a copy at version v can be brought to the current
// version with the deltas the ring holds: every delta v+1 .. ver.
func (p *Publisher) chains(c *pubColl, v uint64) bool {
	if v > c.ver {
		return false
	}
	if v == c.ver {
		return true
	}
	oldest := c.ver - uint64(c.n) + 1
	return c.n > 0 && v+1 >= oldest
}

// snapshot makes the full snapshot current, following the seed's rule:
// pending changes are first closed into a delta at version+1, so that the
// snapshot and the delta of one version describe the same state.
func (p *Publisher) snapshot(c *pubColl) {
	if c.t.hasPending() {
		p.commit(c) // a failed save is logged; the snapshot is of the new history
	}
	if c.hasFull && c.fullVer == c.ver {
		return // the snapshot of this version is already made
	}
	var w codec.Writer
	c.t.encodeFull(&w)
	c.hasFull, c.fullVer, c.full = true, c.ver, w.Bytes()
	p.stats.Fulls++
}

func (p *Publisher) sendFull(to string, i int, c *pubColl, reset bool) {
	p.snapshot(c)
	p.sendChunks(to, i, c, true, reset, c.fullVer)
}

// sendFrom sends the held snapshot (withFull) and the deltas after from.
func (p *Publisher) sendFrom(to string, i int, c *pubColl, withFull bool, from uint64) {
	p.sendChunks(to, i, c, withFull, false, from)
}

// sendChunks sends the snapshot (when withFull, at version from) and the
// deltas from+1 .. ver, in messages of at most half of MaxPayload before
// compression.
func (p *Publisher) sendChunks(to string, i int, c *pubColl, withFull, reset bool, from uint64) {
	budget := p.cfg.MaxPayload / 2
	m := &syncMsg{collection: i, reset: reset}
	size := 0
	if withFull {
		m.withFull, m.fullVer, m.full, m.first = true, from, c.full, from+1
		size = len(c.full)
	} else {
		m.first = from + 1
	}
	for v := from + 1; v <= c.ver; v++ {
		d := c.ring[v%uint64(len(c.ring))].body
		if size+len(d) > budget && (m.withFull || len(m.deltas) > 0) {
			p.sendSync(to, m)
			m = &syncMsg{collection: i, first: v}
			size = 0
		}
		m.deltas = append(m.deltas, d)
		size += len(d)
	}
	if m.withFull || len(m.deltas) > 0 {
		p.sendSync(to, m)
	}
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() PublisherStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Epoch returns the publisher's history: a random non-zero number chosen
// when its file was first written (or at every start without a file).
func (p *Publisher) Epoch() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// Close stops answering reports. It does not save: every commit already
// has. Pending changes not committed are lost.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.cancel != nil {
		p.cancel()
	}
	return nil
}
