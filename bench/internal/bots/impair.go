//go:build !js

package bots

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/tongbu/tongbu/transport/udpimpair"
)

// Impairer is a network between a scenario's server and its bots: a
// udpimpair relay in a process of its own (this executable, as the bots
// are), at the usual niceness, so that its timers fire on time however
// busy the bots' process is. It is pinned with the bots, off the server's
// CPU, when they are.
type Impairer struct {
	child   *Child
	stopped bool
}

// StartImpairer starts a relay listening at front that forwards to the
// server at target with oneWay delay each way.
func StartImpairer(front, target string, oneWay time.Duration) (*Impairer, error) {
	c, err := StartChild([]string{"impair", "-front", front, "-target", target, "-one-way", oneWay.String()}, "")
	if err != nil {
		return nil, err
	}
	if err := c.WaitReady(30 * time.Second); err != nil {
		return nil, err
	}
	return &Impairer{child: c}, nil
}

// PinWithBots puts the relay on the bots' CPU when the shape pins them
// (PinApart): what it costs is the network's, not the server's.
func (im *Impairer) PinWithBots(s Shape) error {
	_, bots, ok := twoCPUs()
	if !s.Pin || !ok {
		return nil
	}
	return pinTo(im.child.cmd.Process.Pid, bots)
}

// Stop stops the relay and returns the datagrams it forwarded and lost.
func (im *Impairer) Stop() (forwarded, lost uint64, err error) {
	im.stopped = true
	err = im.child.Finish("STOP\n", "DONE forwarded=%d lost=%d", &forwarded, &lost)
	return forwarded, lost, err
}

// Kill ends the relay's process, unless Stop did.
func (im *Impairer) Kill() {
	if !im.stopped {
		im.child.Kill()
	}
}

// runImpair is the relay's process: READY once it listens, DONE with its
// counts on "STOP".
func runImpair(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("impair", flag.ContinueOnError)
	front := fs.String("front", "", "where the relay listens")
	target := fs.String("target", "", "the server's UDP address")
	oneWay := fs.Duration("one-way", 25*time.Millisecond, "the delay each way")
	if err := fs.Parse(args); err != nil {
		return err
	}
	to, err := netip.ParseAddrPort(*target)
	if err != nil {
		return fmt.Errorf("-target: %w", err)
	}
	link := udpimpair.Link{Delay: *oneWay}
	r, err := udpimpair.New(*front, to, link, link, 1)
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintln(out, "READY")
	sc := bufio.NewScanner(in)
	for sc.Scan() && sc.Text() != "STOP" {
	}
	st := r.Stats()
	fmt.Fprintf(out, "DONE forwarded=%d lost=%d\n", st.Up+st.Down, st.UpLost+st.DownLost)
	return nil
}
