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
}

// Flags registers the shape's flags on fs.
func (s *Shape) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&s.OwnSockets, "own-sockets", false, "webrtc: each bot on a UDP socket of its own (the default shares one, each bot at its own loopback address: cheaper bots)")
	fs.IntVar(&s.Nice, "bots-nice", 19, "webrtc: the bots' niceness (19: when both want a core the server runs first, as it would on a core of its own; 0: they share)")
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
	return fmt.Sprintf("bots at nice %d, %s", s.Nice, sock)
}
