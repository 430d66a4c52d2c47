package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Subscriber defaults.
const (
	DefaultReportTimeout     = time.Second
	DefaultMaxReportInterval = 8 * time.Second
	DefaultSaveInterval      = time.Second
)

// SubscriberConfig configures a Subscriber. Zero fields take the defaults.
type SubscriberConfig struct {
	// Publisher is the name of the publisher to follow. Required.
	Publisher string
	// ID names this subscriber to the publisher, which answers its reports
	// on replica.<Publisher>.sub.<ID>: 1 to 64 of [A-Za-z0-9_-], unique
	// among the publisher's subscribers. Required.
	ID string
	// Path is the file that keeps the copy across restarts, so that a
	// restarted subscriber asks only for what it missed. Empty means none.
	Path string
	// MaxPayload caps one logical message, reassembled and decompressed,
	// and the bytes held in incomplete messages (default DefaultMaxPayload).
	MaxPayload int
	// MaxRecords caps the records of one collection (default
	// DefaultMaxRecords).
	MaxRecords int
	// ReportTimeout is how long after a report no other is sent, even if
	// the copy is still behind (the seed's report timeout). Default
	// DefaultReportTimeout.
	ReportTimeout time.Duration
	// MaxReportInterval bounds the retry interval, which doubles while
	// reports bring no progress (default DefaultMaxReportInterval).
	MaxReportInterval time.Duration
	// SaveInterval is how often Tick writes a changed copy to Path (default
	// DefaultSaveInterval).
	SaveInterval time.Duration
	// PartTimeout is how long the parts of a split message are kept
	// waiting for the rest (default codec.DefaultReassemblyTimeout).
	PartTimeout time.Duration
	// Logger receives warnings about dropped input and file trouble
	// (default slog.Default()).
	Logger *slog.Logger
}

func (c SubscriberConfig) withDefaults() (SubscriberConfig, error) {
	if err := checkName("publisher", c.Publisher); err != nil {
		return c, err
	}
	if err := checkName("subscriber", c.ID); err != nil {
		return c, err
	}
	if c.MaxPayload <= 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.MaxRecords <= 0 {
		c.MaxRecords = DefaultMaxRecords
	}
	if c.ReportTimeout <= 0 {
		c.ReportTimeout = DefaultReportTimeout
	}
	if c.MaxReportInterval < c.ReportTimeout {
		c.MaxReportInterval = max(DefaultMaxReportInterval, c.ReportTimeout)
	}
	if c.SaveInterval <= 0 {
		c.SaveInterval = DefaultSaveInterval
	}
	if c.PartTimeout <= 0 {
		c.PartTimeout = codec.DefaultReassemblyTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// SubscriberStats counts what a Subscriber did.
type SubscriberStats struct {
	Reports    uint64 // version reports sent
	FullLoads  uint64 // full snapshots loaded
	Deltas     uint64 // deltas applied
	Stale      uint64 // deltas and snapshots at or below the local version, ignored
	Gaps       uint64 // deltas that did not follow the local version
	Resets     uint64 // copies set to version -1: another history, or a delta that does not apply
	Dropped    uint64 // messages dropped as malformed or foreign
	Saves      uint64 // files written
	FileErrors uint64 // failed loads and saves
}

// Subscriber is the seed's game server: it keeps a local copy of every
// collection of one publisher, applies the deltas that follow its version,
// reports its version when it starts and whenever a delta does not follow,
// and persists the copy. It is safe for concurrent use; the bus delivers to
// it from its own goroutines, and Tick drives its timers.
type Subscriber struct {
	mu      sync.RWMutex
	bus     Bus
	cfg     SubscriberConfig
	log     *slog.Logger
	colls   []*subColl
	schema  uint32
	started bool
	closed  bool
	cancels []func()
	reasm   *codec.Reassembler
	msg     []byte

	now        time.Time // the last time Start or Tick was given
	heard      bool      // a message from the publisher arrived since Start
	pubEpoch   uint64    // the publisher's epoch, as last heard
	reported   bool
	lastReport time.Time
	interval   time.Duration // current report retry interval
	progress   bool          // a version advanced since the last report
	dirty      bool          // the copy changed since the last save
	lastSave   time.Time
	stats      SubscriberStats

	saveMu sync.Mutex // serializes file writes, which run outside mu
}

type subColl struct {
	name   string
	schema string
	t      mirrorTable
	epoch  uint64 // history of the copy
	ver    int64  // version of the copy, -1 when there is none
	head   uint64 // highest version the publisher announced in pubEpoch
}

// NewSubscriber returns a Subscriber that follows cfg.Publisher over bus.
// Register its collections with NewMirror, then call Start.
func NewSubscriber(bus Bus, cfg SubscriberConfig) (*Subscriber, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if bus == nil {
		return nil, fmt.Errorf("%w: nil bus", ErrConfig)
	}
	maxParts := min(cfg.MaxPayload/64+1, codec.MaxPartsLimit)
	return &Subscriber{
		bus: bus,
		cfg: cfg,
		log: cfg.Logger,
		reasm: codec.NewReassembler(codec.ReassemblerConfig{
			MaxParts: maxParts, MaxBytes: cfg.MaxPayload, MaxMessage: cfg.MaxPayload, Timeout: cfg.PartTimeout,
		}),
		interval: cfg.ReportTimeout,
	}, nil
}

// Mirror is a subscriber's copy of one collection. Its reads take the
// subscriber's read lock.
type Mirror[T any, P codec.Record[T]] struct {
	s *Subscriber
	c *subColl
	m recordMap[T, P]
}

// NewMirror registers a collection named name with the subscriber. The
// publisher must register the same names, with the same record types, in
// the same order. Register every collection before Start.
func NewMirror[T any, P codec.Record[T]](s *Subscriber, name string) (*Mirror[T, P], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := mayRegister(name, s.started, s.colls, func(c *subColl) string { return c.name }); err != nil {
		return nil, err
	}
	m := &Mirror[T, P]{s: s, m: recordMap[T, P]{recs: make(map[uint64]*T)}}
	m.c = &subColl{name: name, schema: schemaOf(reflect.TypeFor[T]()), t: &m.m, ver: -1}
	s.colls = append(s.colls, m.c)
	return m, nil
}

// Get returns the record id holds in the copy.
func (m *Mirror[T, P]) Get(id uint64) (T, bool) {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	if v := m.m.recs[id]; v != nil {
		return *v, true
	}
	var zero T
	return zero, false
}

// Len returns the number of records in the copy.
func (m *Mirror[T, P]) Len() int {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	return len(m.m.recs)
}

// Range calls fn for every record of the copy, in no particular order,
// until fn returns false. fn must not call into the subscriber.
func (m *Mirror[T, P]) Range(fn func(id uint64, v T) bool) {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	for id, v := range m.m.recs {
		if !fn(id, *v) {
			return
		}
	}
}

// Version returns the version of the copy: the publisher's version it
// matches, or -1 when it has none (empty, or waiting for a full snapshot;
// the records of an earlier copy stay readable until the snapshot
// replaces them).
func (m *Mirror[T, P]) Version() int64 {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	return m.c.ver
}

// Start loads the file (a missing or unusable one starts empty, the
// trouble logged and counted), subscribes, and reports every collection's
// version to the publisher.
func (s *Subscriber) Start(now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return fmt.Errorf("%w: Start called twice", ErrConfig)
	}
	if len(s.colls) == 0 {
		return fmt.Errorf("%w: no collections", ErrConfig)
	}
	names, schemas := make([]string, len(s.colls)), make([]string, len(s.colls))
	for i, c := range s.colls {
		names[i], schemas[i] = c.name, c.schema
	}
	s.schema = schemaHash(names, schemas)
	if s.cfg.Path != "" {
		if err := s.load(); err != nil {
			s.stats.FileErrors++
			s.log.Warn("replica: subscriber starts empty", "subscriber", s.cfg.ID, "path", s.cfg.Path, "err", err)
		}
	}
	for _, subject := range []string{dataSubject(s.cfg.Publisher), directSubject(s.cfg.Publisher, s.cfg.ID)} {
		cancel, err := s.bus.Subscribe(subject, s.onMessage)
		if err != nil {
			for _, c := range s.cancels {
				c()
			}
			s.cancels = nil
			return fmt.Errorf("replica: subscribe to %s: %w", subject, err)
		}
		s.cancels = append(s.cancels, cancel)
	}
	s.started = true
	s.now, s.lastSave = now, now
	s.sendReport()
	return nil
}

// Tick drives the subscriber's timers: it reports again when the copy is
// still behind and the report timeout has passed, drops split messages
// whose parts stopped coming, and saves a changed copy every SaveInterval.
// It returns the error of a failed save.
func (s *Subscriber) Tick(now time.Time) error {
	s.mu.Lock()
	if !s.started || s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.now = now
	s.reasm.Expire(now)
	if s.needReport() {
		s.maybeReport()
	}
	var file []byte
	if s.dirty && now.Sub(s.lastSave) >= s.cfg.SaveInterval && s.cfg.Path != "" {
		file = s.snapshotFile()
	}
	s.mu.Unlock()
	if file == nil {
		return nil
	}
	return s.write(file)
}

// Save writes the copy to the file now, if the subscriber has one.
func (s *Subscriber) Save() error {
	s.mu.Lock()
	if s.cfg.Path == "" || !s.started {
		s.mu.Unlock()
		return nil
	}
	file := s.snapshotFile()
	s.mu.Unlock()
	return s.write(file)
}

// snapshotFile encodes the copy for the file and marks it saved; s.mu is
// held.
func (s *Subscriber) snapshotFile() []byte {
	s.dirty, s.lastSave = false, s.now
	b := binary.AppendUvarint(nil, uint64(s.schema))
	b = binary.AppendUvarint(b, uint64(len(s.colls)))
	for _, c := range s.colls {
		b = appendBytes(b, []byte(c.name))
		b = binary.AppendUvarint(b, c.epoch)
		b = binary.AppendUvarint(b, uint64(c.ver+1))
		var w codec.Writer
		c.t.encodeFull(&w)
		b = appendBytes(b, w.Bytes())
	}
	return sealFile(kindSub, b)
}

func (s *Subscriber) write(file []byte) error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	err := writeFileAtomic(s.cfg.Path, file)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.stats.FileErrors++
		s.dirty = true
		return fmt.Errorf("replica: save %s: %w", s.cfg.Path, err)
	}
	s.stats.Saves++
	return nil
}

// load reads the file into the copy; on error nothing is loaded.
func (s *Subscriber) load() error {
	body, err := readFile(s.cfg.Path, kindSub)
	if err != nil || body == nil {
		return err
	}
	return s.loadBody(body)
}

// loadBody loads a file's body (opened and checked by readFile).
func (s *Subscriber) loadBody(body []byte) error {
	r := &fileReader{b: body}
	schema := r.uvarint("schema")
	n := r.count("collections", maxCollections)
	if r.err != nil {
		return r.err
	}
	if schema != uint64(s.schema) || n != len(s.colls) {
		return fmt.Errorf("%w: file for schema %08x with %d collections, this subscriber has %08x with %d", ErrSchema, schema, n, s.schema, len(s.colls))
	}
	type loaded struct {
		epoch uint64
		ver   int64
		state []byte
	}
	got := make([]loaded, n)
	for i, c := range s.colls {
		name := r.bytes("name")
		epoch, v := r.uvarint("epoch"), r.uvarint("version")
		state := r.bytes("records")
		if r.err != nil {
			return r.err
		}
		if string(name) != c.name || v > maxVersion+1 {
			return fmt.Errorf("%w: collection %q at version %d", ErrBadFile, name, int64(v)-1)
		}
		got[i] = loaded{epoch, int64(v) - 1, state}
	}
	if err := r.done(); err != nil {
		return err
	}
	// Decode every collection into scratch tables first, so that a bad
	// one leaves the copy empty rather than half loaded.
	for i, c := range s.colls {
		if err := c.t.loadFull(codec.NewReader(got[i].state), s.cfg.MaxRecords); err != nil {
			for _, c := range s.colls[:i] {
				c.t.loadFull(codec.NewReader([]byte{0}), 0)
				c.epoch, c.ver = 0, -1
			}
			return fmt.Errorf("%w: collection %q: %v", ErrBadFile, c.name, err)
		}
		c.epoch, c.ver = got[i].epoch, got[i].ver
	}
	return nil
}

// needReport tells whether the copy may be behind the publisher; s.mu is
// held.
func (s *Subscriber) needReport() bool {
	if !s.heard {
		return true
	}
	for _, c := range s.colls {
		if s.behind(c) {
			return true
		}
	}
	return false
}

func (s *Subscriber) behind(c *subColl) bool {
	return c.ver < 0 || c.epoch != s.pubEpoch || uint64(c.ver) < c.head
}

// maybeReport reports unless the last report is younger than the retry
// interval (the seed's timeout); s.mu is held.
func (s *Subscriber) maybeReport() {
	if s.reported && s.now.Sub(s.lastReport) < s.interval {
		return
	}
	if s.reported && !s.progress {
		s.interval = min(2*s.interval, s.cfg.MaxReportInterval)
	} else {
		s.interval = s.cfg.ReportTimeout
	}
	s.sendReport()
}

// sendReport reports every collection's epoch and version; s.mu is held.
func (s *Subscriber) sendReport() {
	rp := report{schema: s.schema, id: s.cfg.ID, held: make([]held, len(s.colls))}
	for i, c := range s.colls {
		rp.held[i] = held{epoch: c.epoch, version: c.ver}
	}
	s.msg = encodeReport(s.msg, rp)
	packet := codec.AppendFrame(nil, typeReport, s.msg)
	s.reported, s.lastReport, s.progress = true, s.now, false
	s.stats.Reports++
	if err := s.bus.Publish(reportSubject(s.cfg.Publisher), packet); err != nil {
		s.log.Warn("replica: report not sent", "subscriber", s.cfg.ID, "err", err)
	}
}

// onMessage handles a message from the publisher (bus goroutine).
func (s *Subscriber) onMessage(msg []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if err := s.handle(msg); err != nil {
		s.stats.Dropped++
		if !errors.Is(err, codec.ErrDuplicatePart) {
			s.log.Warn("replica: message dropped", "subscriber", s.cfg.ID, "err", err)
		}
	}
	if s.needReport() {
		s.maybeReport()
	}
}

func (s *Subscriber) handle(msg []byte) error {
	f, n, err := codec.ReadFrame(msg)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if n != len(msg) {
		return fmt.Errorf("%w: %d bytes after the frame", ErrMalformed, len(msg)-n)
	}
	if f.Type != typeHeads && f.Type != typeSync {
		return fmt.Errorf("%w: frame type %d", ErrMalformed, f.Type)
	}
	payload, err := s.reasm.Add(s.now, f)
	if err != nil {
		return err
	}
	if payload == nil {
		return nil // parts missing
	}
	if f.Type == typeHeads {
		h, err := decodeHeads(payload, s.schema, len(s.colls))
		if err != nil {
			return err
		}
		s.hear(h.epoch)
		for i, c := range s.colls {
			c.head = max(c.head, h.versions[i])
		}
		return nil
	}
	m, err := decodeSync(payload, s.schema, len(s.colls), s.cfg.MaxPayload)
	if err != nil {
		return err
	}
	return s.apply(m)
}

// hear notes a message of the publisher's epoch e; s.mu is held.
func (s *Subscriber) hear(e uint64) {
	s.heard = true
	if e != s.pubEpoch {
		s.pubEpoch = e
		for _, c := range s.colls {
			c.head = 0
		}
	}
}

// apply implements the subscriber's half of the version protocol for one
// sync message; s.mu is held.
func (s *Subscriber) apply(m *syncMsg) error {
	s.hear(m.epoch)
	c := s.colls[m.collection]
	c.head = max(c.head, m.last())
	if m.withFull {
		switch {
		case c.ver < 0, c.epoch != m.epoch, m.reset, int64(m.fullVer) > c.ver:
			// A snapshot newer than the copy (or the copy is none, or of
			// another history): clear the copy and load it, so that records
			// deleted at the publisher are gone.
			if err := c.t.loadFull(codec.NewReader(m.full), s.cfg.MaxRecords); err != nil {
				return fmt.Errorf("collection %q snapshot %d: %w", c.name, m.fullVer, err)
			}
			c.epoch, c.ver = m.epoch, int64(m.fullVer)
			s.stats.FullLoads++
			s.changed()
		default:
			s.stats.Stale++ // the copy is already at or past this snapshot
		}
	}
	for k, d := range m.deltas {
		v := int64(m.first) + int64(k)
		switch {
		case c.ver < 0:
			// No copy to apply a delta to: report -1 for a snapshot.
			s.stats.Gaps++
			return nil
		case c.epoch != m.epoch:
			// The delta is of another history than the copy: the copy is
			// no baseline; report -1 for a snapshot.
			c.ver = -1
			s.stats.Resets++
			return nil
		case v <= c.ver:
			// A late or duplicated copy of a delta already applied.
			s.stats.Stale++
			continue
		case v > c.ver+1:
			// A delta is missing: report the local version.
			s.stats.Gaps++
			return nil
		}
		if err := c.t.applyDelta(codec.NewReader(d), s.cfg.MaxRecords); err != nil {
			c.ver = -1
			s.stats.Resets++
			return fmt.Errorf("collection %q delta %d: %w", c.name, v, err)
		}
		c.ver = v
		s.stats.Deltas++
		s.changed()
	}
	return nil
}

func (s *Subscriber) changed() { s.dirty, s.progress = true, true }

// Stats returns the subscriber's counters.
func (s *Subscriber) Stats() SubscriberStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stats
}

// Close unsubscribes. It does not save: call Save first to keep the
// latest copy.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, c := range s.cancels {
		c()
	}
	return nil
}
