//go:build !js

package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/sched"
)

// Worlds that outlive their server (DESIGN.md, "Worlds that outlive a
// node"; SPEC.md §9.7). A world's checkpoint holds what another server
// needs to go on with it: the world's clock, its entities with their IDs
// (interest.World.AppendSnapshot), the game's own state of them
// (WorldConfig.Checkpoint), and its players, each with its entity and the
// resume credentials this server gave it. RestoreWorld brings a world back
// from one after a crash: its players resume into their entities there,
// and are told the frame the world went back to. PrepareWorld and Release
// move a live world: the new server holds the world, its players' clients
// connect to it ahead and wait (World.Standby), and Release loads the
// checkpoint the old server took as it stopped and lets them all in at
// once.

// MaxCheckpoint bounds a world's checkpoint: what one NATS message and
// one key of a JetStream bucket hold by default is 1 MB; a larger one
// needs the NATS servers' max_payload raised.
const MaxCheckpoint = 64 << 20

// MaxGameState bounds the game's own state in a checkpoint
// (WorldConfig.Checkpoint).
const MaxGameState = 32 << 20

// restoreWindow is how long a restored world keeps its players' entities
// for their clients to resume (at least the server's ResumeWindow).
const restoreWindow = 30 * time.Second

// checkpointMagic starts a checkpoint record.
const checkpointMagic = "tongbu-world\x00"

// CheckpointInfo is what a checkpoint says of itself, read without
// restoring it (ReadCheckpointInfo).
type CheckpointInfo struct {
	World   string    // the world's name
	Frame   int       // the frame it was taken at
	Taken   time.Time // when, by the clock of the server that took it
	Players int       // the players it holds
	Bytes   int       // its size
}

// checkpointRec is a decoded checkpoint.
type checkpointRec struct {
	world   string
	start   time.Time
	taken   time.Time
	snap    []byte
	game    []byte
	players []checkpointPlayer
}

type checkpointPlayer struct {
	player  string
	id      interest.ID
	session time.Time
	valid   [resumeCreds]uint64
}

func appendCheckpoint(dst []byte, c *checkpointRec) []byte {
	// Sized ahead: the snapshot and the game's state are most of it.
	w := codec.NewWriter(make([]byte, 0, len(c.snap)+len(c.game)+len(c.players)*(MaxNameLen+32)+64))
	w.WriteUvarint(1) // version
	w.WriteString(c.world, MaxNameLen)
	w.WriteVarint(c.start.UnixNano())
	w.WriteVarint(c.taken.UnixMilli())
	w.WriteBytes(c.snap, MaxCheckpoint)
	w.WriteBytes(c.game, MaxGameState)
	w.WriteUvarint(uint64(len(c.players)))
	for _, p := range c.players {
		w.WriteString(p.player, MaxNameLen)
		w.WriteUvarint(uint64(p.id))
		w.WriteVarint(p.session.UnixNano())
		for _, n := range p.valid {
			w.WriteBits(n, 64)
		}
	}
	return append(append(dst, checkpointMagic...), w.Bytes()...)
}

func readCheckpoint(b []byte) (*checkpointRec, error) {
	if len(b) > MaxCheckpoint+len(checkpointMagic)+1<<20 || len(b) < len(checkpointMagic) || string(b[:len(checkpointMagic)]) != checkpointMagic {
		return nil, errstack.Wrapf(ErrMalformed, "not a world checkpoint")
	}
	r := codec.NewReader(b[len(checkpointMagic):])
	if v := r.ReadUvarint(); v != 1 {
		return nil, errstack.Wrapf(ErrMalformed, "checkpoint version %d", v)
	}
	c := &checkpointRec{world: r.ReadString(MaxNameLen)}
	c.start = time.Unix(0, r.ReadVarint())
	c.taken = time.UnixMilli(r.ReadVarint())
	c.snap = r.ReadBytes(nil, MaxCheckpoint)
	c.game = r.ReadBytes(nil, MaxGameState)
	n := r.ReadUvarint()
	if n > uint64(r.Remaining()) {
		return nil, errstack.Wrapf(ErrMalformed, "checkpoint: %d players in %d bytes", n, r.Remaining())
	}
	seen := map[string]bool{}
	for range n {
		p := checkpointPlayer{player: r.ReadString(MaxNameLen), id: interest.ID(min(r.ReadUvarint(), 1<<32-1))}
		p.session = time.Unix(0, r.ReadVarint())
		for i := range p.valid {
			p.valid[i] = r.ReadBits(64)
		}
		if r.Err() != nil {
			break
		}
		if checkName("player", p.player) != nil || p.id == 0 || seen[p.player] {
			return nil, errstack.Wrapf(ErrMalformed, "checkpoint: player %q, entity %d", p.player, p.id)
		}
		seen[p.player] = true
		c.players = append(c.players, p)
	}
	if err := r.Err(); err != nil {
		return nil, errstack.Wrapf(ErrMalformed, "checkpoint: %v", err)
	}
	if checkName("world", c.world) != nil {
		return nil, errstack.Wrapf(ErrMalformed, "checkpoint of world %q", c.world)
	}
	return c, nil
}

// ReadCheckpointInfo reads what a checkpoint (World.Checkpoint) says of
// itself, without restoring it.
func ReadCheckpointInfo(b []byte) (CheckpointInfo, error) {
	c, err := readCheckpoint(b)
	if err != nil {
		return CheckpointInfo{}, err
	}
	f, err := interest.SnapshotFrame(c.snap)
	if err != nil {
		return CheckpointInfo{}, errstack.With(err)
	}
	return CheckpointInfo{World: c.world, Frame: f, Taken: c.taken, Players: len(c.players), Bytes: len(b)}, nil
}

// Checkpoint returns the world's checkpoint, taken on its worker between
// two ticks (within a frame period): what RestoreWorld or Release needs
// to go on with the world on another server. It calls the game's
// WorldConfig.Checkpoint there. Do not call it from the world's worker
// (a hook or Do): it waits for it.
func (w *World) Checkpoint(ctx context.Context) ([]byte, error) {
	type out struct {
		b   []byte
		err error
	}
	ch := make(chan out, 1)
	if !w.host.Do(func() {
		start := time.Now()
		b, err := w.checkpoint(nil)
		w.s.metrics.worldCheckpoint(time.Since(start))
		ch <- out{b, err}
	}) {
		return nil, errstack.Wrapf(ErrClosed, "world %q", w.name)
	}
	select {
	case o := <-ch:
		return o.b, o.err
	case <-ctx.Done():
		return nil, errstack.With(ctx.Err())
	}
}

// checkpoint encodes the world's checkpoint; on the worker.
func (w *World) checkpoint(dst []byte) ([]byte, error) {
	c := checkpointRec{world: w.name, start: w.start, taken: time.Now(), snap: w.world.AppendSnapshot(w.snapBuf[:0])}
	w.snapBuf = c.snap[:0]
	if w.cfg.Checkpoint != nil {
		c.game = w.cfg.Checkpoint(w.world)
		if len(c.game) > MaxGameState {
			return nil, errstack.Wrapf(ErrConfig, "world %q: the game's checkpoint state is %d bytes, at most %d", w.name, len(c.game), MaxGameState)
		}
	}
	add := func(player string, id interest.ID) {
		p := checkpointPlayer{player: player, id: id}
		p.session, p.valid = w.s.creds.vouched(player, w.name)
		c.players = append(c.players, p)
	}
	for player, wp := range w.players {
		add(player, wp.id)
	}
	for player, a := range w.away {
		add(player, a.id)
	}
	b := appendCheckpoint(dst, &c)
	if len(b) > MaxCheckpoint {
		return nil, errstack.Wrapf(ErrFull, "world %q: a checkpoint of %d bytes, at most %d", w.name, len(b), MaxCheckpoint)
	}
	return b, nil
}

// RestoreWorld brings back, on this server, a world whose server died,
// from its last checkpoint (World.Checkpoint, read back from where the
// game or package cluster kept it). cfg is the world's configuration, as
// for CreateWorld; its Start is the checkpoint's, so that frame numbers go
// on. The world's entities come back with their IDs, the game's state
// through WorldConfig.Restore, and each of its players' entities waits
// for its client, which resumes here with the credentials the first
// server gave it (it tries the URL World.SetStandby named there, or is
// sent here) and is told the frame the world went back to
// (ConnectionEvent.RestoredFrame). A player that does not come back
// within the resume window (at least 30 s) is let go, as after a lost
// connection.
func (s *Server) RestoreWorld(cfg WorldConfig, checkpoint []byte) (*World, error) {
	c, err := readCheckpoint(checkpoint)
	if err != nil {
		return nil, err
	}
	w, err := s.newWorld(c.world, cfg, c.start)
	if err != nil {
		return nil, err
	}
	if err := w.load(c, true); err != nil {
		return nil, err
	}
	if err := s.register(c.world, nil, w); err != nil {
		return nil, errstack.With(err)
	}
	frame := w.world.Frame() // read before its worker runs
	s.sched.Add(w.host, time.Now())
	s.log.Info("world restored", "world", c.world, "frame", frame, "players", len(c.players), "taken", c.taken)
	return w, nil
}

// PrepareWorld makes, held, the world a live move brings here from
// another server: it does not tick and takes no joins but standby places
// (World.Reserve and World.Hold, booked for the players the old server
// moves), whose clients connect and wait. Release loads the checkpoint the
// old server took as it stopped, and lets them in. start is the world's
// frame 0, the old server's, so that frame numbers go on.
func (s *Server) PrepareWorld(name string, cfg WorldConfig, start time.Time) (*World, error) {
	w, err := s.newWorld(name, cfg, start)
	if err != nil {
		return nil, err
	}
	w.held.Store(true)
	if err := s.register(name, nil, w); err != nil {
		return nil, errstack.With(err)
	}
	s.sched.Add(w.host, time.Now())
	return w, nil
}

// Release loads into a world made by PrepareWorld the checkpoint its old
// server took as it stopped, and starts it: the clients parked in it are
// welcomed into their entities at once (a seamless move: they keep what
// they know), and the players who had no standby place wait for theirs.
// It waits for the world's worker: do not call it from there.
func (w *World) Release(ctx context.Context, checkpoint []byte) error {
	c, err := readCheckpoint(checkpoint)
	if err != nil {
		return err
	}
	if c.world != w.name {
		return errstack.Wrapf(ErrConfig, "a checkpoint of world %q for world %q", c.world, w.name)
	}
	ch := make(chan error, 1)
	if !w.host.Do(func() {
		if !w.held.Load() {
			ch <- errstack.Wrapf(ErrConfig, "world %q is not held", w.name)
			return
		}
		if err := w.load(c, false); err != nil {
			ch <- err
			return
		}
		w.held.Store(false)
		for id := range w.parked {
			w.Admit(id)
		}
		ch <- nil
	}) {
		return errstack.Wrapf(ErrClosed, "world %q", w.name)
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return errstack.With(ctx.Err())
	}
}

// newWorld makes a world's structures, not yet registered nor scheduled.
func (s *Server) newWorld(name string, cfg WorldConfig, start time.Time) (*World, error) {
	if len(name) == 0 || len(name) > MaxNameLen {
		return nil, errstack.Wrapf(ErrConfig, "world name %q: want 1 to %d bytes", name, MaxNameLen)
	}
	if cfg.MaxPlayers < 0 {
		return nil, errstack.Wrapf(ErrConfig, "world %q: MaxPlayers %d", name, cfg.MaxPlayers)
	}
	w := &World{s: s, name: name, cfg: cfg, peers: map[interest.ID]*worldPeer{}, players: map[string]*worldPeer{},
		moving: map[string]*transfer{}, res: map[uint64]*reservation{}, present: map[string]*worldPeer{}, parked: map[uint64]*peer{},
		away: map[string]away{}, start: start, restored: -1}
	if start.IsZero() {
		w.start = time.Now()
	}
	world, err := interest.NewWorld(cfg.Interest, w.start, worldSender{w})
	if err != nil {
		return nil, errstack.With(err)
	}
	w.world = world
	w.host = sched.NewHost[worldPacket](worldLoop{w})
	return w, nil
}

// load puts a checkpoint into the world: its entities, the game's state,
// its players waiting for their clients. crashed: the world goes back to
// the checkpoint's frame, and its players are told so. On the worker, or
// before the world is scheduled.
func (w *World) load(c *checkpointRec, crashed bool) error {
	if err := w.world.RestoreSnapshot(c.snap); err != nil {
		return errstack.Wrapf(err, "world %q", w.name)
	}
	if w.cfg.Restore != nil {
		if err := w.cfg.Restore(w.world, c.game); err != nil {
			return errstack.Wrapf(ErrConfig, "world %q: the game's restore: %v", w.name, err)
		}
	}
	until := time.Now().Add(max(w.s.cfg.ResumeWindow, restoreWindow))
	if crashed {
		w.restored = w.world.Frame()
		w.fromCheckpoint = map[string]bool{}
	}
	w.resMu.Lock()
	defer w.resMu.Unlock()
	for _, p := range c.players {
		if k, ok := w.world.Kind(p.id); !ok || k != interest.Player {
			continue // the game's Restore dropped it
		}
		w.away[p.player] = away{id: p.id, until: until}
		w.present[p.player] = nil
		w.s.creds.adopt(p.player, w.name, p.session, p.valid, until)
		if crashed {
			w.fromCheckpoint[p.player] = true
		}
	}
	return nil
}

// SetStandby tells the world's players, now and as they join, where the
// world comes back if this server falls silent: the server that restores
// it from its checkpoint (package cluster names one). A client that hears
// nothing from the world for FailoverSilence resumes there by itself.
func (w *World) SetStandby(url string) {
	w.Do(func(*interest.World) {
		if w.standby == url {
			return
		}
		w.standby = url
		msg := appendFailover(nil, &failover{standby: url, carry: -1})
		for _, wp := range w.peers {
			if wp.wire >= failoverWire {
				wp.conn.SendReliable(msg)
			}
		}
	})
}

// WorldFeed is what package cluster hooks into a world that outlives its
// server (World.Feed).
type WorldFeed struct {
	// MayTick is asked before every frame, on the world's worker, without
	// blocking: the world runs the frame only if it says yes (its lease
	// from the server that would restore it), and stands still otherwise.
	MayTick func() bool
}

// Feed installs the feed; call it before the world's players come.
func (w *World) Feed(f WorldFeed) {
	w.Do(func(*interest.World) { w.feed = f })
}

// failoverFor is the failover notice a joining player gets before its
// welcome, if any: the standby's URL, and for a player of the checkpoint
// a restored world came back from, the frame it went back to. On the
// worker.
func (w *World) failoverFor(player string) *failover {
	fo := &failover{standby: w.standby, carry: -1}
	if w.fromCheckpoint[player] {
		delete(w.fromCheckpoint, player)
		fo.restored = max(w.restored, 1)
	}
	if fo.standby == "" && fo.restored == 0 {
		return nil
	}
	return fo
}

// RejoinState is the state to book a place with (World.Reserve,
// Destination.Book) for a player whose entity the destination already
// holds, a world that moved there whole (PrepareWorld): the player takes
// its entity back, as a resume does, rather than arriving afresh.
func RejoinState() []byte { return []byte(rejoinMagic) }

const rejoinMagic = "tongbu-rejoin\x00"

// errHeld refuses an ordinary join of a held world.
func (w *World) errHeld() error {
	return fmt.Errorf("%w: world %q is moving here and takes no joins yet", ErrNotFound, w.name)
}

// holdsStandby reports whether the world holds a standby place booked
// with the ticket nonce: what a held world lets in.
func (w *World) holdsStandby(nonce uint64) bool {
	w.resMu.Lock()
	defer w.resMu.Unlock()
	r := w.res[nonce]
	return r != nil && r.hold && r.status == reservePending
}

// Start returns the instant of the world's frame 0.
func (w *World) Start() time.Time { return w.start }

// Parked returns how many standby connections wait in the world for
// their Admit (or, held, for Release).
func (w *World) Parked() int { return int(w.nParked.Load()) }
