package bots

import (
	"flag"
	"fmt"
	"strconv"
)

// Shape is how a scenario's bots' process runs: the flags the relay and
// world benches share.
type Shape struct {
	OwnSockets bool // each bot on a UDP socket of its own
	Nice       int  // the bots' niceness
	Pin        bool // once joined, the server on one CPU and the bots on another
	// Spill, with Pin, lets the bots run on the server's CPU too, at
	// SCHED_IDLE: only when the server leaves it idle (a waking server
	// preempts them at once). More load from the same two CPUs, where
	// the bots, real clients, cost more a player than the server.
	Spill bool
}

// Flags registers the shape's flags on fs.
func (s *Shape) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&s.OwnSockets, "own-sockets", false, "webrtc: each bot on a UDP socket of its own (the default shares one, each bot at its own loopback address: cheaper bots)")
	fs.IntVar(&s.Nice, "bots-nice", 19, "webrtc: the bots' niceness (19: when both want a core the server runs first; 0: they share)")
	fs.BoolVar(&s.Pin, "pin", true, "webrtc: once the bots joined, the server's threads on one CPU and the bots' on another (Linux, 2 CPUs or more; else unpinned)")
	fs.BoolVar(&s.Spill, "bots-spill", false, "webrtc, with -pin: the bots may also use what the server leaves idle of its CPU, at SCHED_IDLE (Linux)")
}

// Args are the bots' process's flags for the shape.
func (s Shape) Args() []string {
	return []string{"-shared=" + strconv.FormatBool(!s.OwnSockets), "-nice=" + strconv.Itoa(s.Nice)}
}

// String describes the shape for a bench's header.
func (s Shape) String() string {
	sock := "sharing one UDP socket"
	if s.OwnSockets {
		sock = "a UDP socket each"
	}
	cpus := "server and bots on any CPU"
	if server, bots, ok := twoCPUs(); s.Pin && ok {
		cpus = fmt.Sprintf("measured with the server on CPU %d and the bots on CPU %d (joined on any)", server, bots)
		if s.Spill {
			cpus = fmt.Sprintf("measured with the server on CPU %d and the bots on CPU %d and, at SCHED_IDLE, on what the server leaves of CPU %d (joined on any)", server, bots, server)
		}
	} else if s.Pin {
		cpus = "not pinned (needs Linux and two CPUs)"
	}
	return fmt.Sprintf("bots at nice %d, %s; %s", s.Nice, sock, cpus)
}
