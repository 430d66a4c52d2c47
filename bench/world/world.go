package world

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/interest"
)

// init registers the scenario with the tongbu-bench command.
func init() {
	harness.Register("world",
		"interest mode in seed 000's environment (6400 players, 28800 NPCs, 16 Hz) beside JX1's state sync",
		benchWorld)
}

// worldModel is the scenario's environment and behaviour model (seed 000,
// section 3.2), printed in its header. Every random draw comes from one
// PCG seeded by -seed.
//
// Map: the default 64 x 64 regions of 1024 units (16 m; 64 units = 1 m).
// Four cities of 12 x 12 regions, one in each quarter of the map, are city
// regions (Config.City); the rest is field.
//
// NPCs (28,800): placed uniformly over the whole map, each with a home,
// spawned from templates as an MMO's are: 64 looks (8 names, 8 looks
// each, a camp each), each 8x8-region zone using 4 of them. Players each
// have a look and a name of their own.
// Every 5-20 s an NPC not in a fight walks to a random point within 1.5
// regions of its home at 12-24 units a frame (3-6 m/s). An NPC a player
// fights stands, strikes back every 2 s (a skill broadcast, 3-8 life off
// the player) and dies at 0 life; it rises 20 s later with full life.
//
// Players (6,400): 40% in the cities, spread evenly over the four (4.4 a
// region: the seed's 4-6), 60% in the field in parties of 5 around a
// party spot. Each runs a small state machine through its own Client, so
// every command is a real uplink the world validates:
//   - city: idle 1-4 s; then 10% of the time an emote (a jump or a 2-byte
//     custom command) and idle again, else a walk to a random point within
//     4 regions, inside its city, at 24 units a frame (6 m/s) or, half the
//     time, at the top speed of 64 (16 m/s). No fighting in cities (seed
//     5.1.2).
//   - field: idle 0.5-2.5 s; then 30% of the time a fight: run to the
//     nearest standing, living NPC no one fights within its 3x3 range,
//     target it (SetTarget), cast a skill on it every 1.5 s (20-35 life
//     off) until it dies, then rest 8 s if below 40 life; otherwise a trip
//     to a random point within 3 regions of its party spot at 64 units a
//     frame (24 one time in five), the spot itself moving up to 3 regions
//     one trip in five.
//
// The movement rates come out near the seed's (section 5.3): a player
// crosses a region border about 0.45 times a second (seed: 0.5), an NPC
// about 0.1 (seed: 0.1); the scenario prints the measured rates.
var worldModel = []string{
	"map: 64x64 regions of 16 m (1024 units); four 12x12-region cities (Config.City), the rest field",
	"NPCs: uniform over the map, from 64 templates (each 8x8-region zone uses 4); players each look unique",
	"  NPCs every 5-20 s walk within 1.5 regions of home at 3-6 m/s; fight back every 2 s; die at 0 life, rise after 20 s",
	"players: 40% in cities (4.4 a region), 60% in the field in parties of 5; each drives its own interest.Client",
	"  city: idle 1-4 s; 10%: jump or 2-byte emote; else walk within 4 regions (in town) at 6 m/s, half at 16 m/s; no fighting",
	"  field: idle 0.5-2.5 s; 30%: run to the nearest free NPC in range, target it, skill every 1.5 s (20-35 life) until it dies",
	"         (rest 8 s if below 40 life); else run within 3 regions of the party spot at 16 m/s (1/5 at 6 m/s); the spot moves",
	"         up to 3 regions 1 trip in 5",
}

// worldWebRTC runs the scenario over real WebRTC (rtc.go; not in js
// builds).
var worldWebRTC func(o worldOpts, out io.Writer) error

// worldOpts are the scenario's flags.
type worldOpts struct {
	players, npcs   int
	warmup, seconds float64
	delay           int // one-way delay in frames
	sample          int // every sample-th player is followed for discovery
	forced          time.Duration
	seed            uint64
	ticks           string     // file for each measured frame's times
	hugePages       bool       // advise the heap to use transparent huge pages
	profile         string     // -transport webrtc: the server's CPU profile of the measured window
	bots            bots.Shape // -transport webrtc: how the bots' process runs
	groups          bool       // the seed's field sets (groups.go)
}

// benchWorld runs the scenario with its flags: in memory, or with
// -transport webrtc over real WebRTC (rtc.go).
func benchWorld(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("world", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a shorter run of the same scenario (CI)")
	o := worldOpts{}
	fs.IntVar(&o.players, "players", 6400, "players")
	fs.IntVar(&o.npcs, "npcs", 28800, "NPCs")
	fs.Float64Var(&o.seconds, "seconds", 60, "simulated seconds measured")
	fs.Float64Var(&o.warmup, "warmup", 10, "simulated seconds run before measuring (every client learns its range)")
	fs.IntVar(&o.delay, "delay", 1, "one-way delay in frames (62.5 ms each at 16 Hz)")
	fs.IntVar(&o.sample, "sample", 4, "follow every n-th player for discovery times")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed")
	fs.BoolVar(&o.groups, "groups", false, "declare the seed's field sets (sent every 1 s, 10 s, 1 min) and change them as the model does (in memory)")
	fs.DurationVar(&o.forced, "forced", 625*time.Millisecond, "the world's Config.ForcedSync (the engine's default is 2s)")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (webrtc: of the server over the measured window, and the bots' to this file.bots)")
	o.bots.Flags(fs)
	memProfile := fs.String("memprofile", "", "write a heap profile at the end of the run to this file")
	fs.StringVar(&o.ticks, "ticks", "", "write a line for each measured frame to this file: its server times (uplinks, whole tick, baseline) and what the world did in it")
	via := fs.String("transport", "mem", "mem: the in-memory scenario above; webrtc: the players are bots in a second process over real WebRTC on loopback (-players, -npcs, -seconds, -warmup, -seed, -forced apply)")
	fs.BoolVar(&o.hugePages, "hugepages", true, "ask Linux for transparent huge pages for the heap (both servers' and the clients'), after setup and again after warm-up, as tongbu serve does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		shorten(fs, &o.warmup, &o.seconds, 4, 8)
	}
	if o.players < 1 || o.npcs < 0 || o.players+o.npcs >= interest.DefaultMaxEntities || o.seconds < 1 || o.warmup < 0 || o.delay < 0 || o.sample < 1 {
		return errors.New("want 1 <= -players, 0 <= -npcs, players+npcs < 65536, -seconds >= 1, -warmup >= 0, -delay >= 0, -sample >= 1")
	}
	switch *via {
	case "mem":
	case "webrtc":
		if worldWebRTC == nil {
			return errors.New("-transport webrtc: not in this build (js)")
		}
		o.profile = *profile // the measured window's, with -transport webrtc
		return worldWebRTC(o, out)
	default:
		return fmt.Errorf("-transport %q: want mem or webrtc", *via)
	}
	s, err := newWorldSim(o)
	if err != nil {
		return err
	}
	if *profile != "" {
		stop, err := harness.StartCPUProfile(*profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	s.printHeader(out)
	s.advise(out, "after setup")
	if err := s.run(out); err != nil {
		return err
	}
	if *memProfile != "" {
		err := harness.WriteHeapProfile(*memProfile)
		runtime.KeepAlive(s) // the world and its clients are what the profile is for
		return err
	}
	return nil
}

// shorten sets a -quick run's warm-up and measured seconds, unless the
// command line gave them.
func shorten(fs *flag.FlagSet, warmup, seconds *float64, w, m float64) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["warmup"] {
		*warmup = w
	}
	if !set["seconds"] {
		*seconds = m
	}
}

// printHeader prints what the in-memory run is: its population and
// times, the world's settings, the behaviour model, and the heap's
// setting when huge pages are not asked for.
func (s *worldSim) printHeader(out io.Writer) {
	o := s.o
	fmt.Fprintf(out, "world: %d players, %d NPCs, %d Hz, %.0f s warm-up then %.0f s measured (virtual time), %d frame(s) one way, seed %d\n",
		o.players, o.npcs, s.cfg.Hz, o.warmup, o.seconds, o.delay, o.seed)
	fmt.Fprintf(out, "interest config: defaults but ForcedSync %v (engine default %v) and City as below\n", s.cfg.ForcedSync, interest.DefaultForcedSync)
	for _, l := range worldModel {
		fmt.Fprintln(out, "  "+l)
	}
	if o.groups {
		fmt.Fprintln(out, groupsModel)
	}
	if !o.hugePages {
		fmt.Fprintln(out, "heap: huge pages not asked for (-hugepages=false): the system's setting decides")
	}
}
