//go:build !js

package loss

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// lossRun is one stack's match over the impaired path.
type lossRun struct {
	stack     transport.Stack
	delivered float64 // frames every client played, of those cut
	identical bool
	unstalled float64
	rttMean   float64 // ms
	rttP99    float64
	relay     udpimpair.Stats
	dropped   []string // players whose connection ended during play
}

// benchLossWebRTC plays a lockstep match between native clients and the
// engine's server over real WebRTC on loopback, through a user-space UDP
// relay that impairs both ways, for each stack in turn.
func benchLossWebRTC(out io.Writer, players int, d time.Duration, up, down udpimpair.Link) error {
	fmt.Fprintf(out, "loss over WebRTC: %d native players, 15 Hz, %v, through a UDP relay: %.0f%% loss (bursts of %g), %v +- %v each way\n\n",
		players, d, 100*up.Loss, max(up.Burst, 1), up.Delay, up.Jitter)
	var runs []lossRun
	for _, stack := range []transport.Stack{transport.StackLean, transport.StackPion} {
		r, err := lossMatch(lossPath{stack: stack, up: up, down: down}, players, d)
		if err != nil {
			return fmt.Errorf("%s: %w", stack, err)
		}
		runs = append(runs, r)
		fmt.Fprintf(out, "%-5s delivered %.4f identical %v  unstalled %.4f  rtt mean %.0f ms p99 %.0f ms  (relay: %d/%d up, %d/%d down lost)\n",
			stack, r.delivered, r.identical, r.unstalled, r.rttMean, r.rttP99,
			r.relay.UpLost, r.relay.Up+r.relay.UpLost, r.relay.DownLost, r.relay.Down+r.relay.DownLost)
		for _, d := range r.dropped {
			fmt.Fprintf(out, "      dropped: %s\n", d)
		}
	}
	lean, pion := runs[0], runs[1]
	fmt.Fprintln(out, "\nrtt is the clients' transport estimate (SCTP's smoothed RTT), sampled every 100 ms.")
	fmt.Fprintln(out, harness.Result("loss",
		"transport", "webrtc",
		"loss", up.Loss, "burst", max(up.Burst, 1), "players", players, "seconds", d.Seconds(),
		"delivered", fmt.Sprintf("%.4f", lean.delivered),
		"unstalled", fmt.Sprintf("%.4f", lean.unstalled),
		"rtt_mean_ms", fmt.Sprintf("%.0f", lean.rttMean),
		"rtt_p99_ms", fmt.Sprintf("%.0f", lean.rttP99),
		"baseline_delivered", fmt.Sprintf("%.4f", pion.delivered),
		"baseline_unstalled", fmt.Sprintf("%.4f", pion.unstalled),
		"baseline_rtt_mean_ms", fmt.Sprintf("%.0f", pion.rttMean),
		"baseline_rtt_p99_ms", fmt.Sprintf("%.0f", pion.rttP99),
	))
	if !lean.identical || !pion.identical {
		return errors.New("clients played different frame sequences")
	}
	if len(lean.dropped) > 0 {
		return fmt.Errorf("lean: %s", lean.dropped[0])
	}
	return nil
}

// lossPath is the path of one match: the stack's server, and either the
// UDP relay with its links or, when dial is set, the server at host
// (UDP and TCP) and clients that dial from elsewhere with dial over
// network.
type lossPath struct {
	stack    transport.Stack
	up, down udpimpair.Link
	host     string
	network  string
	dial     func(f func() error) error
}

// lossMatch runs one match: a server of the stack on 127.0.0.1, the relay
// on 127.0.0.2 at the same port (the server advertises 127.0.0.2), native
// clients of the same stack; or, on a path with dial, the server at its
// host and clients that dial through it.
func lossMatch(path lossPath, players int, d time.Duration) (lossRun, error) {
	stack := path.stack
	res := lossRun{stack: stack}
	secret := []byte("bench-loss-webrtc-secret-0123456789")
	cfg := engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", PublicIPs: []string{"127.0.0.2"}, Stack: stack,
		// The handshake crosses the loss too: pion's SCTP backs its INIT
		// and its channels' opens off from a second, and 10 s was not
		// always enough (a run in a few hundred under a loaded machine).
		Limits: transport.Limits{HandshakeTimeout: 30 * time.Second}}
	if path.dial != nil {
		cfg.UDPAddr, cfg.TCPAddr, cfg.PublicIPs = path.host+":0", path.host+":0", nil
	}
	srv, err := engine.NewServer(cfg)
	if err != nil {
		return res, err
	}
	var relay *udpimpair.Relay
	if path.dial == nil {
		udp := srv.UDPAddr().(*net.UDPAddr).AddrPort()
		relay, err = udpimpair.New(fmt.Sprintf("127.0.0.2:%d", udp.Port()), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), udp.Port()), path.up, path.down, 1)
		if err != nil {
			return res, err
		}
		defer relay.Close()
	}
	created := time.Now()
	if _, err := srv.CreateRoom("loss", lockstep.Config{Players: players, Hz: 15}); err != nil {
		return res, err
	}
	url, stop, err := harness.ServeEngine(srv)
	if err != nil {
		return res, err
	}
	defer stop()

	type clientRun struct {
		frames  []uint64 // a hash of each frame played, by number
		stalled time.Duration
		rtts    []float64
		err     error
	}
	runs := make([]clientRun, players)
	var wg sync.WaitGroup
	start := make(chan struct{})
	var dialErr error
	var mu sync.Mutex
	for i := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ticket, err := srv.Ticket(fmt.Sprintf("p%d", i), "loss", engine.RolePlayer, time.Hour)
			if err != nil {
				runs[i].err = err
				return
			}
			dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
			var c *engine.Client
			if path.dial != nil {
				err = path.dial(func() (err error) {
					c, err = engine.Dial(dctx, url, ticket, &engine.ClientConfig{Stack: stack, Network: path.network, Limits: srv.Limits()})
					return err
				})
			} else {
				c, err = engine.Dial(dctx, url, ticket, &engine.ClientConfig{Stack: stack, Limits: srv.Limits()})
			}
			dcancel()
			if err != nil {
				mu.Lock()
				dialErr = errors.Join(dialErr, err)
				mu.Unlock()
				return
			}
			defer c.Close()
			<-start
			ls := c.Lockstep()
			tick := time.NewTicker(time.Second / 60)
			defer tick.Stop()
			end := time.Now().Add(d)
			lastRTT := time.Now()
			n := 0
			for now := time.Now(); now.Before(end); now = <-tick.C {
				if n%4 == 0 { // one input per frame of the 15 Hz room
					ls.Input(now, []byte{byte(i), byte(n)})
				}
				n++
				if err := c.Update(now); err != nil {
					runs[i].err = err
					return
				}
				for _, f := range ls.Advance(now).Frames {
					h := fnv.New64a()
					for _, s := range f.Slots {
						for _, in := range s.Inputs {
							h.Write(in)
						}
						h.Write([]byte{0xff})
					}
					for len(runs[i].frames) <= f.Number {
						runs[i].frames = append(runs[i].frames, 0)
					}
					runs[i].frames[f.Number] = h.Sum64()
				}
				if now.Sub(lastRTT) >= 100*time.Millisecond {
					lastRTT = now
					if rtt := c.Stats().RTT; rtt > 0 {
						runs[i].rtts = append(runs[i].rtts, float64(rtt)/float64(time.Millisecond))
					}
				}
			}
			runs[i].stalled = ls.Playout().Stalled
		}()
	}
	// Every client joins before play is timed.
	time.Sleep(100 * time.Millisecond)
	close(start)
	end := time.Now().Add(d)
	wg.Wait()
	if dialErr != nil {
		return res, dialErr
	}
	res.identical = true
	// Every frame the room cut up to 2 s before the end (the jitter
	// buffer's lag and then some) must have been played by every client.
	cut := int(end.Add(-2*time.Second).Sub(created).Seconds() * 15)
	res.delivered = 1
	var rtts []float64
	var stalled time.Duration
	for i, r := range runs {
		if r.err != nil {
			res.dropped = append(res.dropped, fmt.Sprintf("player %d: %v", i, r.err))
		}
		played := 0
		for f := range min(cut, len(r.frames)) {
			if r.frames[f] != 0 {
				played++
			}
		}
		res.delivered = min(res.delivered, float64(played)/float64(max(cut, 1)))
		rtts = append(rtts, r.rtts...)
		stalled += r.stalled
		for f := range min(len(r.frames), len(runs[0].frames)) {
			if r.frames[f] != runs[0].frames[f] {
				res.identical = false
			}
		}
	}
	res.unstalled = 1 - stalled.Seconds()/(d.Seconds()*float64(players))
	if len(rtts) > 0 {
		slices.Sort(rtts)
		sum := 0.0
		for _, v := range rtts {
			sum += v
		}
		res.rttMean = sum / float64(len(rtts))
		res.rttP99 = rtts[min(len(rtts)-1, len(rtts)*99/100)]
	}
	if relay != nil {
		res.relay = relay.Stats()
	}
	return res, nil
}
