//go:build !js

package world

import (
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

func init() { worldWebRTC = benchWorldRTC }

// worldTickMetric is the engine's histogram of world tick times.
const worldTickMetric = "tongbu_world_tick_seconds"

// rtcBudget is the frame a 16 Hz world must fit its tick and its
// transport in, on one core, with room to spare: half of 62.5 ms.
const rtcBudget = 33 * time.Millisecond

// rtcModel is the WebRTC scenario's population, simpler than the
// in-memory one's: the players are bots in another process.
var rtcModel = []string{
	"map: 64x64 regions of 16 m, four 12x12-region cities (Config.City); players join 40% in the cities, 60% in the field in parties of 5",
	"NPCs: uniform over the map; every 5-20 s each walks within 1.5 regions of home at 3-6 m/s (the world's Tick hook)",
	"players: bots in a second process, each with its own engine.Client over the lean WebRTC stack; every 2-6 s a walk (6 m/s)",
	"  or a run (16 m/s) to a point within 3 regions",
}

// worldRTCRun is one measured run.
type worldRTCRun struct {
	players, npcs int
	join          time.Duration
	wall          time.Duration
	frames        int
	cpu           time.Duration // the server process's, over the window
	tick          harness.Histogram
	botCores      float64
	lost          int
	packets       uint64  // the bots received in the window
	msgs          float64 // the server received and sent in the window
	gcFraction    float64 // the GC's share of the server's Go CPU in the window (runtime/metrics)
	allocs        uint64  // the server process's heap allocations in the window
	up, down      float64 // messages received and sent in the window
	upBytes       float64 // the mean message received, in bytes
	downBytes     float64 // the mean message sent
	floor         bots.FloorRun
	sys           time.Duration // the part of cpu in the kernel
}

// allocsPerMsg is the server's heap allocations per message.
func (r *worldRTCRun) allocsPerMsg() float64 { return float64(r.allocs) / max(r.msgs, 1) }

// transportPerMsg is the server's CPU per message besides the world's
// ticks, in us: what the floor is beside.
func (r *worldRTCRun) transportPerMsg() float64 {
	return (r.cpu.Seconds() - r.tick.Sum) * 1e6 / max(r.msgs, 1)
}

// measureFloor runs the plain-UDP floor at the run's shape: as many bots,
// each sending messages of the mean uplink size at the uplink's rate (at
// least one a second), and a server that sends each a message of the
// mean downlink size every tick.
func (r *worldRTCRun) measureFloor(hz int, seconds float64) error {
	upHz := max(int(r.up/r.wall.Seconds()/float64(r.players)+0.5), 1)
	f, err := bots.RunFloor(bots.FloorConfig{TickHz: hz, Stream: max(int(r.downBytes+0.5), 1)},
		r.players, upHz, max(int(r.upBytes+0.5), 4), seconds)
	r.floor = f
	return err
}

// cpuPerMsg is the server's CPU per message it received or sent, in us.
func (r *worldRTCRun) cpuPerMsg() float64 { return r.cpu.Seconds() * 1e6 / max(r.msgs, 1) }

// tickP99 is the world tick's 99th percentile, in ms.
func (r *worldRTCRun) tickP99() float64 {
	v, _ := r.tick.Quantile(0.99)
	return v * 1e3
}

// transportPerFrame is the server's CPU per frame besides the world's
// ticks: the transport, signaling and the engine's plumbing, in ms.
func (r *worldRTCRun) transportPerFrame() float64 {
	return (r.cpu.Seconds() - r.tick.Sum) * 1e3 / float64(max(r.frames, 1))
}

// valid reports whether the bots kept up: a saturated bots' process
// reads and sends less, and the server looks cheap.
func (r *worldRTCRun) valid() bool { return r.botCores < 0.95 && r.lost == 0 }

func benchWorldRTC(o worldOpts, out io.Writer) error {
	// The server on one core, as the target asks; the bots on the other.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fmt.Fprintf(out, "world over WebRTC: %d players, %d NPCs, 16 Hz, the server in this process (GOMAXPROCS=1), bots in a second process (%v);\n", o.players, o.npcs, o.bots)
	fmt.Fprintf(out, "%.0f s warm-up after all joined, then %.0f s measured (wall time)\n", o.warmup, o.seconds)
	for _, l := range rtcModel {
		fmt.Fprintln(out, "  "+l)
	}
	r, err := runWorldRTC(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\njoined in %.1f s; window %.1f s, %d frames\n", r.join.Seconds(), r.wall.Seconds(), r.frames)
	fmt.Fprintf(out, "world tick p99 %.2f ms, mean %.2f ms (tongbu_world_tick_seconds, %d ticks)\n", r.tickP99(), r.tick.Sum*1e3/float64(max(r.tick.Count(), 1)), r.tick.Count())
	fmt.Fprintf(out, "server CPU %.2f s (%.2f cores); besides the ticks, %.2f ms a frame (transport, signaling, plumbing)\n",
		r.cpu.Seconds(), r.cpu.Seconds()/r.wall.Seconds(), r.transportPerFrame())
	fmt.Fprintf(out, "server messages: %.0f a second, %.2f us of CPU each (all of it, ticks included)\n", r.msgs/r.wall.Seconds(), r.cpuPerMsg())
	fmt.Fprintf(out, "tick p99 + transport a frame: %.2f ms (budget %v on one core)\n", r.tickP99()+r.transportPerFrame(), rtcBudget)
	fmt.Fprintf(out, "bots: %.2f cores, %d packets received (%.1f a player a second), %d lost\n",
		r.botCores, r.packets, float64(r.packets)/r.wall.Seconds()/float64(o.players), r.lost)
	if !r.valid() {
		fmt.Fprintln(out, "invalid: the bots' process was saturated or lost players; the server's figures are of a lighter load than asked")
	}
	hz := interest.Config{}.WithDefaults().Hz
	if err := r.measureFloor(hz, o.seconds); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	fmt.Fprintf(out, "server: %.3f heap allocations a message, GC %.1f%% of its Go CPU; messages of %.0f bytes up (%.0f), %.0f down (%.0f)\n",
		r.allocsPerMsg(), 100*r.gcFraction, r.upBytes, r.up, r.downBytes, r.down)
	fmt.Fprintf(out, "transport CPU a message (besides the ticks): %.2f us; the plain-UDP floor at that shape (a datagram down a player\n", r.transportPerMsg())
	fmt.Fprintf(out, "  a tick, the uplinks counted; recvmmsg, sendmmsg, no crypto, no SCTP): %.2f us over %d messages: %.2f times the floor\n",
		r.floor.CPUPerMsg(), r.floor.Msgs, r.transportPerMsg()/max(r.floor.CPUPerMsg(), 1e-9))
	fmt.Fprintln(out, harness.Result("world",
		"transport", "webrtc",
		"players", o.players,
		"npcs", o.npcs,
		"tick_p99_ms", r.tickP99(),
		"transport_ms_per_frame", r.transportPerFrame(),
		"total_ms_per_frame", r.tickP99()+r.transportPerFrame(),
		"cpu_us_per_msg", r.cpuPerMsg(),
		"bots_cores", r.botCores,
		"valid", r.valid(),
		"server_cores", r.cpu.Seconds()/max(r.wall.Seconds(), 1e-9),
		"transport_cpu_us_per_msg", r.transportPerMsg(),
		"floor_cpu_us_per_msg", r.floor.CPUPerMsg(),
		"cpu_vs_floor", r.transportPerMsg()/max(r.floor.CPUPerMsg(), 1e-9),
		"allocs_per_msg", r.allocsPerMsg(),
		"gc_cpu_fraction", r.gcFraction,
		// The kernel's part of the transport's and the floor's (the ticks
		// make no system calls), from getrusage.
		"kernel_us_per_msg", r.sys.Seconds()*1e6/max(r.msgs, 1),
		"floor_kernel_us_per_msg", r.floor.SysPerMsg(),
	))
	return nil
}

// runWorldRTC runs the world with its NPCs in this process and the
// players as bots in a second one, and measures the window after the
// warm-up.
func runWorldRTC(o worldOpts) (*worldRTCRun, error) {
	r := &worldRTCRun{players: o.players, npcs: o.npcs}
	srv, err := bots.NewServer(o.players + 16)
	if err != nil {
		return nil, err
	}
	pop := newRTCPopulation(o)
	w, err := srv.CreateWorld("jx3", engine.WorldConfig{
		Interest: interest.Config{City: pop.isCity, ForcedSync: o.forced},
		Join:     pop.join,
		Tick:     pop.tick,
	})
	if err != nil {
		srv.Shutdown(context.Background())
		return nil, err
	}
	spawned := make(chan error, 1)
	w.Do(func(iw *interest.World) { spawned <- pop.spawnNPCs(iw) })
	if err := <-spawned; err != nil {
		srv.Shutdown(context.Background())
		return nil, err
	}
	bs, err := bots.Start(srv, bots.Spec{Kind: "world", Args: []string{"-seed", strconv.FormatUint(o.seed, 10)}, Shape: o.bots,
		Players: o.players, TTL: time.Hour, Profile: o.profile,
		Seat: func(i int) (string, string) { return "p" + strconv.Itoa(i), w.Name() }})
	if err != nil {
		return nil, err
	}
	defer bs.Close()
	r.join = bs.Join
	child := bs.Child
	kill := func(err error) (*worldRTCRun, error) {
		child.Kill()
		return nil, err
	}
	// The server on one CPU and the bots on the other from the warm-up
	// on (-pin).
	unpin, _, err := o.bots.PinApart(child)
	if err != nil {
		return kill(err)
	}
	defer unpin()
	time.Sleep(time.Duration(o.warmup * float64(time.Second))) // every client learns its range
	frames := func() int { return worldFrame(w) }
	win, marks, err := bots.Measure(bs.URL, time.Duration(o.seconds*float64(time.Second)), o.profile, frames, worldTickMetric)
	if err != nil {
		return kill(err)
	}
	r.frames, r.cpu, r.sys, r.wall = marks[1]-marks[0], win.CPU, win.Sys, win.Wall
	r.tick = win.After.Hist[worldTickMetric].Since(win.Before.Hist[worldTickMetric])
	r.msgs = win.After.Messages() - win.Before.Messages()
	r.gcFraction = win.Runtime[1].GCFraction(win.Runtime[0])
	r.allocs = win.Runtime[1].AllocsSince(win.Runtime[0])
	d := func(name string) float64 { return win.After.Samples[name] - win.Before.Samples[name] }
	r.up, r.down = d("tongbu_received_messages_total"), d("tongbu_sent_messages_total")
	r.upBytes = d("tongbu_received_bytes_total") / max(r.up, 1)
	r.downBytes = d("tongbu_sent_bytes_total") / max(r.down, 1)
	if err := child.Finish("STOP\n", "DONE lost=%d cores=%g packets=%d", &r.lost, &r.botCores, &r.packets); err != nil {
		return nil, err
	}
	return r, nil
}

// worldFrame returns the frame world w is at, asked on its worker.
func worldFrame(w *engine.World) int {
	f := make(chan int, 1)
	w.Do(func(iw *interest.World) { f <- iw.Frame() })
	return <-f
}

// rtcPopulation places the joining players and walks the NPCs, on the
// world's worker.
type rtcPopulation struct {
	o      worldOpts
	rng    *mrand.Rand
	cities [4][2]interest.Region
	cfg    interest.Config
	npcs   []rtcNPC
	spot   interest.Vec // the current party's spot
}

type rtcNPC struct {
	id   interest.ID
	home interest.Vec
	next int // frame of its next walk
}

func newRTCPopulation(o worldOpts) *rtcPopulation {
	p := &rtcPopulation{o: o, rng: mrand.New(mrand.NewPCG(o.seed, 0x7000)), cfg: interest.Config{}.WithDefaults()}
	for i := range p.cities {
		cx, cy := 6+40*(i%2), 6+40*(i/2)
		p.cities[i] = [2]interest.Region{{X: cx, Y: cy}, {X: cx + citySide - 1, Y: cy + citySide - 1}}
	}
	return p
}

func (p *rtcPopulation) isCity(r interest.Region) bool {
	for _, c := range p.cities {
		if r.X >= c[0].X && r.X <= c[1].X && r.Y >= c[0].Y && r.Y <= c[1].Y {
			return true
		}
	}
	return false
}

// randIn returns a random position inside the regions lo..hi.
func (p *rtcPopulation) randIn(lo, hi interest.Region) interest.Vec {
	rs := p.cfg.RegionSize
	return interest.Vec{X: int32(lo.X*rs + p.rng.IntN((hi.X-lo.X+1)*rs)), Y: int32(lo.Y*rs + p.rng.IntN((hi.Y-lo.Y+1)*rs))}
}

func (p *rtcPopulation) anywhere() interest.Vec {
	return p.randIn(interest.Region{}, interest.Region{X: p.cfg.Width - 1, Y: p.cfg.Height - 1})
}

func (p *rtcPopulation) spawnNPCs(w *interest.World) error {
	for range p.o.npcs {
		pos := p.anywhere()
		id, err := w.Spawn(interest.NPC, interest.Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100},
			interest.Display{Appearance: uint32(p.rng.IntN(64)), Name: "野狼"})
		if err != nil {
			return err
		}
		p.npcs = append(p.npcs, rtcNPC{id: id, home: pos, next: p.rng.IntN(16 * p.cfg.Hz)})
	}
	return nil
}

// join places player "p<i>": the first 40% in the cities in turn, the
// rest in the field in parties of 5 around a spot.
func (p *rtcPopulation) join(w *interest.World, player string) (interest.ID, error) {
	i, err := strconv.Atoi(strings.TrimPrefix(player, "p"))
	if err != nil {
		return 0, fmt.Errorf("bench world: player %q", player)
	}
	var pos interest.Vec
	if city := p.o.players * 2 / 5; i < city {
		c := p.cities[i%len(p.cities)]
		pos = p.randIn(c[0], c[1])
	} else {
		if (i-city)%5 == 0 || p.spot == (interest.Vec{}) {
			for p.spot = p.anywhere(); p.isCity(w.RegionOf(p.spot)); p.spot = p.anywhere() {
			}
		}
		d := int32(p.cfg.RegionSize)
		hi := p.cfg.Bounds()
		pos = interest.Vec{X: min(max(p.spot.X+p.rng.Int32N(2*d+1)-d, 0), hi.X), Y: min(max(p.spot.Y+p.rng.Int32N(2*d+1)-d, 0), hi.Y)}
	}
	return w.Spawn(interest.Player, interest.Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100},
		interest.Display{Appearance: p.rng.Uint32(), Name: player})
}

// tick walks the NPCs whose time has come.
func (p *rtcPopulation) tick(w *interest.World, _ time.Time) {
	f := w.Frame()
	reach := int32(p.cfg.RegionSize) * 3 / 2
	hi := p.cfg.Bounds()
	for i := range p.npcs {
		n := &p.npcs[i]
		if f < n.next {
			continue
		}
		dest := interest.Vec{X: min(max(n.home.X+p.rng.Int32N(2*reach+1)-reach, 0), hi.X), Y: min(max(n.home.Y+p.rng.Int32N(2*reach+1)-reach, 0), hi.Y)}
		_ = w.Move(n.id, dest, int32(12+p.rng.IntN(13)))
		n.next = f + (5+p.rng.IntN(16))*p.cfg.Hz
	}
}
