package relay

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/internal/sched"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

func init() {
	harness.Register("relay",
		"lockstep rooms of 10 at 15 Hz: the room code's CPU per player-frame (in memory), or the server's over WebRTC with bots in a second process",
		benchRelay)
}

// relayJob is one room with the server ends of its players' connections:
// the scheduler's worker drains them and ticks the room, timing the room
// code alone.
type relayJob struct {
	room  *lockstep.Room
	conns []*memnet.Conn
	out   *runSender
	in    []inbound
	mu    *sync.Mutex
	spent *time.Duration
	msgs  *uint64 // messages the room took and sent
}

// inbound is an uplink message taken off the in-memory network before the
// room's run is timed.
type inbound struct {
	slot int
	data []byte
}

// runSender keeps the room's sends in one reused buffer during the timed
// run and hands them to the in-memory network after it, so that only the
// room's own code (and one copy of each packet) is timed, with two clock
// reads per run rather than two per message.
type runSender struct {
	buf  []byte
	msgs []queuedMsg
}

type queuedMsg struct {
	slot     int
	reliable bool
	from, to int
}

func (s *runSender) SendUnreliable(slot int, msg []byte) error { return s.add(slot, false, msg) }
func (s *runSender) SendReliable(slot int, msg []byte) error   { return s.add(slot, true, msg) }

func (s *runSender) add(slot int, reliable bool, msg []byte) error {
	from := len(s.buf)
	s.buf = append(s.buf, msg...)
	s.msgs = append(s.msgs, queuedMsg{slot, reliable, from, len(s.buf)})
	return nil
}

// flush sends what the run queued; the network copies each message.
func (s *runSender) flush(conns []*memnet.Conn) {
	for _, m := range s.msgs {
		if m.reliable {
			_ = conns[m.slot].SendReliable(s.buf[m.from:m.to])
		} else {
			_ = conns[m.slot].SendUnreliable(s.buf[m.from:m.to])
		}
	}
	s.buf, s.msgs = s.buf[:0], s.msgs[:0]
}

func (j *relayJob) Run(now time.Time) time.Time {
	j.in = j.in[:0]
	for slot, c := range j.conns {
		for {
			m, ok := c.TryReceive()
			if !ok {
				break
			}
			j.in = append(j.in, inbound{slot, m.Data})
		}
	}
	// The room's own CPU time, not the wall clock: the thread's CPU clock
	// stops while the machine's other load runs, and the goroutine stays
	// on its thread for the span.
	runtime.LockOSThread()
	t0 := threadCPU()
	for _, m := range j.in {
		j.room.Deliver(m.slot, m.data, now)
	}
	j.room.Tick(now)
	spent := threadCPU() - t0
	runtime.UnlockOSThread()
	sent := len(j.out.msgs)
	j.out.flush(j.conns)
	j.mu.Lock()
	*j.spent += spent
	*j.msgs += uint64(len(j.in) + sent)
	j.mu.Unlock()
	return j.room.NextCut()
}

// relayRTCOpts are the flags of the relay scenario over WebRTC.
type relayRTCOpts struct {
	players int
	seconds float64
	find    bool
	max     int
	profile string
	bots    bots.Shape
	simUS   float64 // a server-side simulation's CPU a room frame, microseconds (0: none)
}

// relayWebRTC runs the relay scenario over WebRTC; nil where the server
// does not build (js).
var relayWebRTC func(relayRTCOpts, io.Writer) error

func benchRelay(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	kind := fs.String("transport", "mem", "transport: mem (the in-memory network) or webrtc (bots in a second process)")
	players := fs.Int("players", 1000, "players, in rooms of 10")
	seconds := fs.Float64("seconds", 10, "run time")
	inputRate := fs.Float64("input", 0.5, "chance a player sends an input each frame (mem; webrtc bots send one every frame)")
	find := fs.Bool("find", false, "webrtc: search for the most players the server holds, from -players up to -max (below -players when it is not held)")
	maxPlayers := fs.Int("max", 4000, "webrtc -find: the largest load tried")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (webrtc: of the server over the measured window, and the bots' to this file.bots)")
	simUS := fs.Float64("sim-us", 0, "webrtc: each room also runs a server-side simulation (Config.Simulation, as a room that verifies its players' hashes) costing about this many microseconds of CPU a frame: the server's core busy with a game's work beside the data path")
	var shape bots.Shape
	shape.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *kind == "webrtc" && relayWebRTC != nil:
		return relayWebRTC(relayRTCOpts{players: *players, seconds: *seconds, find: *find, max: *maxPlayers, profile: *profile, bots: shape, simUS: *simUS}, out)
	case *kind != "mem":
		return fmt.Errorf("transport %q: want mem or webrtc", *kind)
	}
	if *players < 10 || *seconds <= 0 {
		return errors.New("want -players >= 10, -seconds > 0")
	}
	rooms := *players / 10
	cfg := lockstep.Config{Players: 10, Hz: 15}
	net := memnet.New(1)
	scheduler := sched.NewScheduler(1) // the room code on one core; the bots use the other
	defer scheduler.Close()
	var mu sync.Mutex
	var spent time.Duration
	var msgs uint64
	type bot struct {
		c    *lockstep.Client
		conn *memnet.Conn
	}
	var bots []bot
	var jobs []*relayJob
	start := time.Now().Add(100 * time.Millisecond)
	for range rooms {
		j := &relayJob{mu: &mu, spent: &spent, msgs: &msgs}
		var sconns []*memnet.Conn
		var err error
		for slot := range cfg.Players {
			cc, sc := net.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
			sconns = append(sconns, sc)
			c, cerr := lockstep.NewClient(cfg, slot)
			if cerr != nil {
				return cerr
			}
			bots = append(bots, bot{c, cc})
		}
		j.conns = sconns
		j.out = &runSender{}
		j.room, err = lockstep.NewRoom(cfg, start, j.out)
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
		scheduler.Add(j, j.room.NextCut())
	}
	// The bots: one goroutine plays every client at the frame rate.
	stop := make(chan struct{})
	botsDone := make(chan struct{})
	go func() {
		defer close(botsDone)
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(cfg.Period())
		defer tick.Stop()
		input := []byte{0, 0, 0, 0}
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				for i, b := range bots {
					for {
						m, ok := b.conn.TryReceive()
						if !ok {
							break
						}
						b.c.Deliver(now, m.Data)
					}
					if rng.Float64() < *inputRate {
						input[0], input[1] = byte(i), byte(rng.IntN(8))
						b.c.Input(now, input)
					}
					b.conn.SendUnreliable(b.c.Packet(now))
					b.c.Advance(now)
				}
			}
		}
	}()
	if *profile != "" {
		stopProfile, err := harness.StartCPUProfile(*profile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	time.Sleep(time.Duration(*seconds * float64(time.Second)))
	close(stop)
	<-botsDone
	scheduler.Close()
	st := scheduler.Stats()
	frames, inputs, made := 0, uint64(0), uint64(0)
	for _, j := range jobs {
		rs := j.room.Stats()
		frames += rs.Frames
		inputs += rs.Inputs
		made += rs.MadeUp
	}
	mu.Lock()
	total, nmsgs := spent, msgs
	mu.Unlock()
	playerFrames := frames * cfg.Players
	perPF := float64(total.Nanoseconds()) / 1e3 / float64(max(playerFrames, 1))
	perMsg := float64(total.Nanoseconds()) / 1e3 / float64(max(nmsgs, 1))
	msgsPF := float64(nmsgs) / float64(max(playerFrames, 1))
	// The bots offer an input a player-frame with chance -input; starved
	// ones offer fewer, and the room looks cheap.
	valid := float64(inputs+made) > 0 && float64(inputs) >= 0.95**inputRate*float64(playerFrames)
	fmt.Fprintf(out, "relay: %d rooms of %d players at %d Hz for %gs over the in-memory transport\n\n", rooms, cfg.Players, cfg.Hz, *seconds)
	fmt.Fprintf(out, "frames cut          %d (%d player-frames: %d real inputs, %d made up)\n", frames, playerFrames, inputs, made)
	fmt.Fprintf(out, "room CPU time       %v (Deliver and Tick, the thread's CPU clock around each run; sends queued and handed to the network after)\n", total.Round(time.Millisecond))
	fmt.Fprintf(out, "per player-frame    %.3f us (%.2f messages a player-frame, %.3f us a message)\n", perPF, msgsPF, perMsg)
	if !valid {
		fmt.Fprintf(out, "INVALID: the bots offered %d inputs for %d player-frames, under 95%% of the %.2f asked for (starved)\n", inputs, playerFrames, *inputRate)
	}
	fmt.Fprintf(out, "cut lateness        p50 %v, p99 %v, max %v over %d runs\n", st.LateP50, st.LateP99, st.LateMax, st.Runs)
	fmt.Fprintln(out, harness.Result("relay",
		"transport", *kind,
		"players", rooms*cfg.Players,
		"cpu_us_per_player_frame", perPF,
		"msgs_per_player_frame", msgsPF,
		"cpu_us_per_msg", perMsg,
		"valid", valid,
		"p99_cut_late_ms", float64(st.LateP99)/float64(time.Millisecond),
	))
	return nil
}
