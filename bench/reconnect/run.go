package reconnect

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tongbu/tongbu/bench/internal/moba"
	"github.com/tongbu/tongbu/bench/internal/simmatch"
	"github.com/tongbu/tongbu/internal/sched"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
	"github.com/tongbu/tongbu/transport/memnet"
)

// dropSlot is the slot of the player who drops and rejoins.
const dropSlot = 4

// reconnectRun runs the scenario once and prints its report; with
// snapshot the reconnect room runs movers and catches the player up from
// a snapshot.
func reconnectRun(o reconnectOpts, snapshot bool, out io.Writer) (reconnectFigures, error) {
	r := newMatchRun(o, snapshot)
	if err := r.playToDrop(); err != nil {
		return reconnectFigures{}, err
	}
	if err := r.goLive(); err != nil {
		return reconnectFigures{}, err
	}
	r.scheduler = sched.NewScheduler(1) // the rooms on one core; the clients use the other
	defer r.scheduler.Close()
	if err := r.addOtherRooms(); err != nil {
		return reconnectFigures{}, err
	}
	r.scheduler.Add(r.rj, r.m.Room.NextCut())
	r.startPlayers()
	got, err := r.rejoin()
	if err != nil {
		return reconnectFigures{}, err
	}
	res := r.results(got)
	r.print(out, res)
	return r.figures(res)
}

// matchRun is one run of the scenario as it goes: the match up to the
// drop, then its room and the other rooms on the scheduler, and their
// players, in real time.
type matchRun struct {
	o        reconnectOpts
	snapshot bool
	cfg      lockstep.Config
	link     memnet.LinkConfig

	m         *simmatch.Match
	simulated time.Duration // the wall time the match up to the drop took

	net       *memnet.Network
	rj        *roomJob      // the reconnect room
	rc        []*liveClient // its players but the one who dropped
	liveCh    chan lockstep.Event
	evMu      sync.Mutex
	desyncs   []lockstep.Event
	lr, spent *lateRec
	scheduler *sched.Scheduler
	bots      []*liveClient // the other rooms' players
	models    []*moba.Model // their input models, by room

	stop chan struct{}
	wg   sync.WaitGroup

	rjMu         sync.Mutex
	rejoiner     *liveClient
	liveBytes    uint64 // what the rejoining client received until it went live
	caughtFrames int
}

// newMatchRun returns a run of the scenario's rooms: 5v5 at 15 Hz, the
// reconnect room running movers when snapshot is set.
func newMatchRun(o reconnectOpts, snapshot bool) *matchRun {
	cfg := lockstep.Config{Players: 10, Hz: 15}.WithDefaults()
	if snapshot {
		cfg.Simulation = func() lockstep.Simulation {
			g, _ := movers.New(cfg.Players, nil) // 10 players and no params: never fails
			return g
		}
	}
	return &matchRun{o: o, snapshot: snapshot, cfg: cfg, link: memnet.LinkConfig{Latency: o.latency}}
}

// playToDrop plays the match up to the drop, on a simulated clock that
// ends now.
func (r *matchRun) playToDrop() error {
	t0 := time.Now()
	start := t0.Add(-r.o.dropAt)
	m, err := simmatch.New(r.cfg, start, r.o.seed)
	if err != nil {
		return err
	}
	for dropFrame := int(r.o.dropAt.Seconds() * float64(r.cfg.Hz)); m.N < dropFrame; {
		if err := m.Step(); err != nil {
			return err
		}
	}
	r.m, r.simulated = m, time.Since(t0)
	return nil
}

// goLive moves the match to real time: from here on the room runs as a
// job on the scheduler, its players over the in-memory network; the
// player in dropSlot has crashed. The room's events tell when the
// rejoining player is live and collect desyncs.
func (r *matchRun) goLive() error {
	r.net = memnet.New(r.o.seed)
	r.rj = &roomJob{room: r.m.Room, conns: make([]*memnet.Conn, r.cfg.Players)}
	for i, c := range r.m.Clients {
		if i == dropSlot {
			continue
		}
		cc, sc := r.net.Pipe(r.link, r.link)
		r.rj.conns[i] = sc
		r.rc = append(r.rc, &liveClient{c: c, conn: cc, game: r.m.Games[i], slot: i})
	}
	r.m.Out.Real = jobSender{r.rj}
	if err := r.m.Room.Leave(dropSlot); err != nil {
		return err
	}
	r.liveCh = make(chan lockstep.Event, 1)
	r.rj.onEvent = func(e lockstep.Event) {
		switch e.Kind {
		case lockstep.EventLive:
			if e.Slot == dropSlot {
				r.liveCh <- e
			}
		case lockstep.EventDesync:
			r.evMu.Lock()
			r.desyncs = append(r.desyncs, e)
			r.evMu.Unlock()
		}
	}
	r.lr, r.spent = &lateRec{}, &lateRec{}
	r.rj.spent = r.spent
	return nil
}

// addOtherRooms puts -rooms other rooms of 10 on the scheduler, each
// with its players and their input model; their lateness goes to r.lr.
func (r *matchRun) addOtherRooms() error {
	cfg := r.cfg
	otherStart := time.Now().Add(100 * time.Millisecond)
	for room := range r.o.others {
		j := &roomJob{conns: make([]*memnet.Conn, cfg.Players), late: r.lr}
		var err error
		j.room, err = lockstep.NewRoom(cfg, otherStart, jobSender{j})
		if err != nil {
			return err
		}
		r.models = append(r.models, moba.NewModel(cfg.Players, r.o.seed+uint64(room)+1, otherStart))
		for i := range cfg.Players {
			cc, sc := r.net.Pipe(r.link, r.link)
			j.conns[i] = sc
			c, err := lockstep.NewClient(cfg, i)
			if err != nil {
				return err
			}
			g, err := movers.New(cfg.Players, nil)
			if err != nil {
				return err
			}
			r.bots = append(r.bots, &liveClient{c: c, conn: cc, game: g, slot: i})
		}
		r.scheduler.Add(j, j.room.NextCut())
	}
	return nil
}

// startPlayers starts the players: the other rooms' at the frame rate on
// one goroutine; the reconnect room's at 30 Hz on another, the rejoining
// client among them once it exists. stopPlayers stops them.
func (r *matchRun) startPlayers() {
	r.stop = make(chan struct{})
	r.wg.Add(2)
	go r.playOthers()
	go r.playReconnectRoom()
}

// stopPlayers stops the players' goroutines and waits for them.
func (r *matchRun) stopPlayers() {
	close(r.stop)
	r.wg.Wait()
}

// playOthers ticks the other rooms' players at the frame rate until
// stopped.
func (r *matchRun) playOthers() {
	defer r.wg.Done()
	tick := time.NewTicker(r.cfg.Period())
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-tick.C:
			for i, b := range r.bots {
				b.tick(now, r.models[i/r.cfg.Players], r.cfg.HashEvery)
			}
		}
	}
}

// playReconnectRoom ticks the reconnect room's players at 30 Hz until
// stopped, the rejoining client among them once it exists: it counts
// the frames that client ran while catching up, and the bytes it had
// received when it stopped catching up.
func (r *matchRun) playReconnectRoom() {
	defer r.wg.Done()
	tick := time.NewTicker(time.Second / 30)
	defer tick.Stop()
	caught := false
	for {
		select {
		case <-r.stop:
			return
		case now := <-tick.C:
			for _, c := range r.rc {
				c.tick(now, r.m.Model, r.cfg.HashEvery)
			}
			r.rjMu.Lock()
			if rej := r.rejoiner; rej != nil {
				st := rej.tick(now, r.m.Model, r.cfg.HashEvery)
				if st.CatchingUp {
					r.caughtFrames += len(st.Frames)
					caught = true
				} else if caught && r.liveBytes == 0 {
					r.liveBytes = rej.conn.Stats().RecvBytes
				}
			}
			r.rjMu.Unlock()
		}
	}
}

// rejoined is what rejoin leaves for the results: the rejoining client's
// end of its connection, the frames the room had cut when it joined, and
// the room's live event for it.
type rejoined struct {
	cc       *memnet.Conn
	streamed chan int
	live     lockstep.Event
}

// rejoin plays the real-time phases: a warm-up, the baseline with the
// player away, then the rejoin, until the room says the player is live,
// and 2 s after. It stops the players and the scheduler.
func (r *matchRun) rejoin() (rejoined, error) {
	// Warm-up, baseline with the player away, then the rejoin.
	time.Sleep(2 * time.Second)
	r.lr.set(phaseBaseline)
	r.spent.set(phaseBaseline)
	time.Sleep(r.o.baseline)
	cc, sc := r.net.Pipe(r.link, r.link)
	c, err := lockstep.NewClient(r.cfg, dropSlot)
	if err != nil {
		return rejoined{}, err
	}
	g, err := movers.New(r.cfg.Players, nil)
	if err != nil {
		return rejoined{}, err
	}
	got := rejoined{cc: cc, streamed: make(chan int, 1)}
	r.lr.set(phaseCatchUp)
	r.spent.set(phaseCatchUp)
	r.rj.do(func(now time.Time) {
		r.rj.conns[dropSlot] = sc
		if err := r.rj.room.Join(dropSlot, now); err == nil {
			got.streamed <- r.rj.room.NextFrame()
		}
	})
	r.rjMu.Lock()
	r.rejoiner = &liveClient{c: c, conn: cc, game: g, slot: dropSlot}
	r.rjMu.Unlock()
	select {
	case got.live = <-r.liveCh:
	case <-time.After(60 * time.Second):
		r.stopPlayers()
		return rejoined{}, errors.New("the rejoining player was not live after 60 s")
	}
	r.lr.set(phaseAfter)
	r.spent.set(phaseAfter)
	time.Sleep(2 * time.Second)
	r.stopPlayers()
	r.scheduler.Close()
	return got, nil
}

// runResults are one run's figures, as the report prints them.
type runResults struct {
	frames     int // streamed to the rejoining client (or missed, with a snapshot)
	live       lockstep.Event
	q          lockstep.PeerQuality
	bytes      uint64 // the rejoining client received until live
	ran        int    // frames it ran while catching up
	snapAt     int
	restoreErr error
	desyncs    []lockstep.Event
}

// results gathers the run's figures once rejoin has returned.
func (r *matchRun) results(got rejoined) runResults {
	res := runResults{frames: <-got.streamed, live: got.live, q: r.m.Room.Quality().Peers[dropSlot]}
	r.rjMu.Lock()
	res.bytes, res.ran = r.liveBytes, r.caughtFrames
	res.snapAt, res.restoreErr = r.rejoiner.snapAt, r.rejoiner.restoreErr
	r.rejoiner.restoreErr = nil
	r.rjMu.Unlock()
	if res.bytes == 0 {
		res.bytes = got.cc.Stats().RecvBytes
	}
	r.evMu.Lock()
	res.desyncs = r.desyncs
	r.evMu.Unlock()
	return res
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// print prints the run's report: the rejoin, and the other rooms' cut
// lateness and the reconnect room's run times by phase.
func (r *matchRun) print(out io.Writer, res runResults) {
	cfg, o := r.cfg, r.o
	frames, live := res.frames, res.live
	base, nBase := r.lr.quantile(phaseBaseline, 0.99)
	during, nDuring := r.lr.quantile(phaseCatchUp, 0.99)
	after, nAfter := r.lr.quantile(phaseAfter, 0.99)
	base50, _ := r.lr.quantile(phaseBaseline, 0.5)
	during50, _ := r.lr.quantile(phaseCatchUp, 0.5)

	fmt.Fprintf(out, "reconnect: 5v5 at %d Hz; player %d drops at %v and rejoins over a %v RTT link; %d other rooms of 10 on one scheduler worker\n",
		cfg.Hz, dropSlot, o.dropAt, 2*o.latency, o.others)
	fmt.Fprintf(out, "input model (seed %d): %s\n", o.seed, moba.Doc)
	fmt.Fprintf(out, "(the first %v simulated in %v, then real time; catch-up budget %d bytes per tick)\n\n", o.dropAt, r.simulated.Round(time.Millisecond), cfg.CatchUpBytes)
	if r.snapshot {
		fmt.Fprintf(out, "frames missed          %d (a snapshot at frame %d, then the client ran %d while catching up, live from frame %d)\n", frames, res.snapAt, res.ran, live.Frame)
	} else {
		fmt.Fprintf(out, "frames streamed        %d (the client ran %d while catching up, live from frame %d)\n", frames, res.ran, live.Frame)
	}
	fmt.Fprintf(out, "time to live           %d ms (Join to the client's live message at the room; the client runs at most 600 frames per 30 Hz render tick)\n", live.After/time.Millisecond)
	fmt.Fprintf(out, "bytes to the client    %d until live (%d catch-up bytes, %.1f bytes per frame)\n", res.bytes, res.q.CatchUpBytes, float64(res.q.CatchUpBytes)/float64(max(frames, 1)))
	fmt.Fprintf(out, "desync events          %d (the rejoined client's hashes are compared as it catches up)\n", len(res.desyncs))
	fmt.Fprintf(out, "other rooms' cut lateness  %12s %10s %10s\n", "window", "p50", "p99")
	fmt.Fprintf(out, "  baseline (player away)   %5d runs %10v %10v\n", nBase, base50, base)
	fmt.Fprintf(out, "  catch-up (join to live)  %5d runs %10v %10v\n", nDuring, during50, during)
	fmt.Fprintf(out, "  after (2 s live)         %5d runs %10s %10v\n", nAfter, "", after)
	fmt.Fprintf(out, "p99 increase during catch-up: %.2f ms\n", ms(during-base))
	p99Base, _ := r.spent.quantile(phaseBaseline, 0.99)
	p99During, _ := r.spent.quantile(phaseCatchUp, 0.99)
	maxBase, _ := r.spent.quantile(phaseBaseline, 1)
	maxDuring, _ := r.spent.quantile(phaseCatchUp, 1)
	fmt.Fprintf(out, "the reconnect room's run (drain, tick, catch-up): p99 %v, max %v in the baseline; p99 %v, max %v during catch-up\n",
		p99Base, maxBase, p99During, maxDuring)
	if r.snapshot {
		st := r.m.Room.Stats()
		fmt.Fprintf(out, "snapshot               %d taken, restored at frame %d; the room's simulation ran %d frames, at most %d behind the cut\n",
			st.Snapshots, res.snapAt, st.SimFrames, st.MaxSimLag)
	}
}

// figures checks the run (the snapshot restored, no desync) and returns
// its figures for the RESULT line.
func (r *matchRun) figures(res runResults) (reconnectFigures, error) {
	if r.snapshot {
		if res.restoreErr != nil {
			return reconnectFigures{}, fmt.Errorf("restoring the snapshot: %w", res.restoreErr)
		}
		if r.m.Room.Stats().Snapshots == 0 || res.snapAt == 0 {
			return reconnectFigures{}, errors.New("the room sent no snapshot")
		}
	}
	if n := len(res.desyncs); n > 0 {
		return reconnectFigures{}, fmt.Errorf("%d desync events: %+v", n, res.desyncs)
	}
	during, _ := r.lr.quantile(phaseCatchUp, 0.99)
	return reconnectFigures{frames: res.frames, toLiveMs: int(res.live.After / time.Millisecond), bytes: res.bytes, lateMs: ms(during)}, nil
}
