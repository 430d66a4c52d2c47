package reconnect

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tongbu/tongbu/bench/internal/simmatch"
	"github.com/tongbu/tongbu/examples/moba"
	"github.com/tongbu/tongbu/internal/sched"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
	"github.com/tongbu/tongbu/transport"
)

// reconnectRun runs the scenario once and prints its report; with
// snapshot the reconnect room runs movers and catches the player up from
// a snapshot.
func reconnectRun(o reconnectOpts, snapshot bool, out io.Writer) (reconnectFigures, error) {
	var fig reconnectFigures
	dropAt, others, latency, baseline, seed := &o.dropAt, &o.others, &o.latency, &o.baseline, &o.seed
	const slot = 4 // the player who drops
	cfg := lockstep.Config{Players: 10, Hz: 15}.WithDefaults()
	if snapshot {
		cfg.Simulation = func() lockstep.Simulation {
			g, _ := movers.New(cfg.Players, nil) // 10 players and no params: never fails
			return g
		}
	}
	link := transport.LinkConfig{Latency: *latency}

	// The match up to the drop, on a simulated clock that ends now.
	t0 := time.Now()
	start := t0.Add(-*dropAt)
	m, err := simmatch.New(cfg, start, *seed)
	if err != nil {
		return fig, err
	}
	for dropFrame := int(dropAt.Seconds() * float64(cfg.Hz)); m.N < dropFrame; {
		if err := m.Step(); err != nil {
			return fig, err
		}
	}
	simulated := time.Since(t0)

	// From here on real time: the room on the scheduler, its players over
	// the in-memory network; the player in slot has crashed.
	net := transport.NewNetwork(*seed)
	rj := &roomJob{room: m.Room, conns: make([]*transport.MemConn, cfg.Players)}
	var rc []*liveClient
	for i, c := range m.Clients {
		if i == slot {
			continue
		}
		cc, sc := net.Pipe(link, link)
		rj.conns[i] = sc
		rc = append(rc, &liveClient{c: c, conn: cc, game: m.Games[i], slot: i})
	}
	m.Out.Real = jobSender{rj}
	if err := m.Room.Leave(slot); err != nil {
		return fig, err
	}
	liveCh := make(chan lockstep.Event, 1)
	var evMu sync.Mutex
	var desyncs []lockstep.Event
	rj.onEvent = func(e lockstep.Event) {
		switch e.Kind {
		case lockstep.EventLive:
			if e.Slot == slot {
				liveCh <- e
			}
		case lockstep.EventDesync:
			evMu.Lock()
			desyncs = append(desyncs, e)
			evMu.Unlock()
		}
	}

	lr, spent := &lateRec{}, &lateRec{}
	rj.spent = spent
	scheduler := sched.NewScheduler(1) // the rooms on one core; the clients use the other
	defer scheduler.Close()
	var bots []*liveClient
	var models []*moba.Model
	otherStart := time.Now().Add(100 * time.Millisecond)
	for r := range *others {
		j := &roomJob{conns: make([]*transport.MemConn, cfg.Players), late: lr}
		j.room, err = lockstep.NewRoom(cfg, otherStart, jobSender{j})
		if err != nil {
			return fig, err
		}
		models = append(models, moba.NewModel(cfg.Players, *seed+uint64(r)+1, otherStart))
		for i := range cfg.Players {
			cc, sc := net.Pipe(link, link)
			j.conns[i] = sc
			c, err := lockstep.NewClient(cfg, i)
			if err != nil {
				return fig, err
			}
			g, err := movers.New(cfg.Players, nil)
			if err != nil {
				return fig, err
			}
			bots = append(bots, &liveClient{c: c, conn: cc, game: g, slot: i})
		}
		scheduler.Add(j, j.room.NextCut())
	}
	scheduler.Add(rj, m.Room.NextCut())

	// The other rooms' players at the frame rate on one goroutine; the
	// reconnect room's at 30 Hz on another, the rejoining client among
	// them once it exists.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(cfg.Period())
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				for i, b := range bots {
					b.tick(now, models[i/cfg.Players], cfg.HashEvery)
				}
			}
		}
	}()
	var rjMu sync.Mutex
	var rejoiner *liveClient
	var liveBytes uint64 // what the rejoining client received until it went live
	var caughtFrames int
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second / 30)
		defer tick.Stop()
		caught := false
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				for _, c := range rc {
					c.tick(now, m.Model, cfg.HashEvery)
				}
				rjMu.Lock()
				if r := rejoiner; r != nil {
					st := r.tick(now, m.Model, cfg.HashEvery)
					if st.CatchingUp {
						caughtFrames += len(st.Frames)
						caught = true
					} else if caught && liveBytes == 0 {
						liveBytes = r.conn.Stats().RecvBytes
					}
				}
				rjMu.Unlock()
			}
		}
	}()

	// Warm-up, baseline with the player away, then the rejoin.
	time.Sleep(2 * time.Second)
	lr.set(phaseBaseline)
	spent.set(phaseBaseline)
	time.Sleep(*baseline)
	cc, sc := net.Pipe(link, link)
	c, err := lockstep.NewClient(cfg, slot)
	if err != nil {
		return fig, err
	}
	g, err := movers.New(cfg.Players, nil)
	if err != nil {
		return fig, err
	}
	streamed := make(chan int, 1)
	lr.set(phaseCatchUp)
	spent.set(phaseCatchUp)
	rj.do(func(now time.Time) {
		rj.conns[slot] = sc
		if err := rj.room.Join(slot, now); err == nil {
			streamed <- rj.room.NextFrame()
		}
	})
	rjMu.Lock()
	rejoiner = &liveClient{c: c, conn: cc, game: g, slot: slot}
	rjMu.Unlock()
	var live lockstep.Event
	select {
	case live = <-liveCh:
	case <-time.After(60 * time.Second):
		close(stop)
		wg.Wait()
		return fig, errors.New("the rejoining player was not live after 60 s")
	}
	lr.set(phaseAfter)
	spent.set(phaseAfter)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	scheduler.Close()

	frames := <-streamed
	q := m.Room.Quality().Peers[slot]
	rjMu.Lock()
	bytes, ran := liveBytes, caughtFrames
	snapAt, restoreErr := rejoiner.snapAt, rejoiner.restoreErr
	rejoiner.restoreErr = nil
	rjMu.Unlock()
	if bytes == 0 {
		bytes = cc.Stats().RecvBytes
	}
	base, nBase := lr.quantile(phaseBaseline, 0.99)
	during, nDuring := lr.quantile(phaseCatchUp, 0.99)
	after, nAfter := lr.quantile(phaseAfter, 0.99)
	base50, _ := lr.quantile(phaseBaseline, 0.5)
	during50, _ := lr.quantile(phaseCatchUp, 0.5)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	evMu.Lock()
	nDesync := len(desyncs)
	evMu.Unlock()

	fmt.Fprintf(out, "reconnect: 5v5 at %d Hz; player %d drops at %v and rejoins over a %v RTT link; %d other rooms of 10 on one scheduler worker\n",
		cfg.Hz, slot, *dropAt, 2**latency, *others)
	fmt.Fprintf(out, "input model (seed %d): %s\n", *seed, moba.Doc)
	fmt.Fprintf(out, "(the first %v simulated in %v, then real time; catch-up budget %d bytes per tick)\n\n", *dropAt, simulated.Round(time.Millisecond), cfg.CatchUpBytes)
	if snapshot {
		fmt.Fprintf(out, "frames missed          %d (a snapshot at frame %d, then the client ran %d while catching up, live from frame %d)\n", frames, snapAt, ran, live.Frame)
	} else {
		fmt.Fprintf(out, "frames streamed        %d (the client ran %d while catching up, live from frame %d)\n", frames, ran, live.Frame)
	}
	fmt.Fprintf(out, "time to live           %d ms (Join to the client's live message at the room; the client runs at most 600 frames per 30 Hz render tick)\n", live.After/time.Millisecond)
	fmt.Fprintf(out, "bytes to the client    %d until live (%d catch-up bytes, %.1f bytes per frame)\n", bytes, q.CatchUpBytes, float64(q.CatchUpBytes)/float64(max(frames, 1)))
	fmt.Fprintf(out, "desync events          %d (the rejoined client's hashes are compared as it catches up)\n", nDesync)
	fmt.Fprintf(out, "other rooms' cut lateness  %12s %10s %10s\n", "window", "p50", "p99")
	fmt.Fprintf(out, "  baseline (player away)   %5d runs %10v %10v\n", nBase, base50, base)
	fmt.Fprintf(out, "  catch-up (join to live)  %5d runs %10v %10v\n", nDuring, during50, during)
	fmt.Fprintf(out, "  after (2 s live)         %5d runs %10s %10v\n", nAfter, "", after)
	fmt.Fprintf(out, "p99 increase during catch-up: %.2f ms\n", ms(during-base))
	p99Base, _ := spent.quantile(phaseBaseline, 0.99)
	p99During, _ := spent.quantile(phaseCatchUp, 0.99)
	maxBase, _ := spent.quantile(phaseBaseline, 1)
	maxDuring, _ := spent.quantile(phaseCatchUp, 1)
	fmt.Fprintf(out, "the reconnect room's run (drain, tick, catch-up): p99 %v, max %v in the baseline; p99 %v, max %v during catch-up\n",
		p99Base, maxBase, p99During, maxDuring)
	if snapshot {
		st := m.Room.Stats()
		fmt.Fprintf(out, "snapshot               %d taken, restored at frame %d; the room's simulation ran %d frames, at most %d behind the cut\n",
			st.Snapshots, snapAt, st.SimFrames, st.MaxSimLag)
		if restoreErr != nil {
			return fig, fmt.Errorf("restoring the snapshot: %w", restoreErr)
		}
		if st.Snapshots == 0 || snapAt == 0 {
			return fig, errors.New("the room sent no snapshot")
		}
	}
	if nDesync > 0 {
		return fig, fmt.Errorf("%d desync events: %+v", nDesync, desyncs)
	}
	return reconnectFigures{frames: frames, toLiveMs: int(live.After / time.Millisecond), bytes: bytes, lateMs: ms(during)}, nil
}
