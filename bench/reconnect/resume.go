//go:build !js

package reconnect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// benchResume measures how long a player whose path goes silent is away:
// a native lean client joins a world or a lockstep room through a UDP
// relay, the relay then drops everything of the path until the client
// has noticed (its idle timeout), and the client resumes by itself
// through a new socket. resume_ms is from noticing to being back
// (Resumed); outage_ms from the path's loss to being back. Beside them,
// in the same run, a fresh Dial with a new ticket: what a game would
// need its own server for without resuming.
func benchResume(out io.Writer, trials int) error {
	if trials < 1 {
		return errors.New("want -trials >= 1")
	}
	lim := transport.Limits{IdleTimeout: 2 * time.Second}
	srv, err := engine.NewServer(engine.Config{Secret: []byte("bench-reconnect-resume-secret-0123"), UDPAddr: "127.0.0.1:0",
		PublicIPs: []string{"127.0.0.2"}, Limits: lim})
	if err != nil {
		return err
	}
	port := srv.UDPAddr().(*net.UDPAddr).AddrPort().Port()
	relay, err := udpimpair.New(fmt.Sprintf("127.0.0.2:%d", port), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
		udpimpair.Link{Delay: 25 * time.Millisecond}, udpimpair.Link{Delay: 25 * time.Millisecond}, 1)
	if err != nil {
		return err
	}
	defer relay.Close()
	if _, err := srv.CreateWorld("field", engine.WorldConfig{Interest: interest.Config{Width: 16, Height: 16}}); err != nil {
		return err
	}
	url, stop, err := harness.ServeEngine(srv)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(out, "resume: a native lean client through a relay (50 ms RTT); its path goes silent; idle timeout %v; %d trials a mode\n\n", lim.IdleTimeout, trials)
	var resumeMs, outageMs, freshMs []float64
	for _, target := range []string{"field", "duo"} {
		for i := range trials {
			to := target
			if target == "duo" { // a room of its own each time: two players at most
				to = fmt.Sprintf("duo-%d", i)
				if _, err := srv.CreateRoom(to, lockstep.Config{Players: 2, Hz: 30}); err != nil {
					return err
				}
			}
			ticket, _ := srv.Ticket(fmt.Sprintf("p-%s-%d", target, i), to, engine.RolePlayer, time.Minute)
			var lostAt, noticed, back time.Time
			var state engine.ConnectionState
			cfg := &engine.ClientConfig{Limits: lim, OnConnection: func(e engine.ConnectionEvent) {
				state = e.State
				switch e.State {
				case engine.Reconnecting:
					noticed = time.Now()
					relay.SetLinks(udpimpair.Link{Delay: 25 * time.Millisecond}, udpimpair.Link{Delay: 25 * time.Millisecond})
				case engine.Resumed:
					back = time.Now()
				}
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			t0 := time.Now()
			c, err := engine.Dial(ctx, url, ticket, cfg)
			cancel()
			if err != nil {
				return fmt.Errorf("%s trial %d: %w", target, i, err)
			}
			freshMs = append(freshMs, float64(time.Since(t0))/1e6)
			// Play a second, then lose the path.
			run := func(until func() bool, d time.Duration) error {
				for end := time.Now().Add(d); !until(); time.Sleep(5 * time.Millisecond) {
					now := time.Now()
					if err := c.Update(now); err != nil {
						return err
					}
					if ls := c.Lockstep(); ls != nil {
						ls.Advance(now)
					}
					if time.Now().After(end) {
						return errors.New("timed out")
					}
				}
				return nil
			}
			played := time.Now().Add(time.Second)
			if err := run(func() bool { return time.Now().After(played) }, 5*time.Second); err != nil {
				c.Close()
				return fmt.Errorf("%s trial %d: playing: %w", target, i, err)
			}
			relay.SetLinks(udpimpair.Link{Loss: 1}, udpimpair.Link{Loss: 1})
			lostAt = time.Now()
			err = run(func() bool { return state == engine.Resumed || state == engine.Lost }, 30*time.Second)
			c.Close()
			if err != nil || state != engine.Resumed {
				return fmt.Errorf("%s trial %d: not resumed (%v, state %v)", target, i, err, state)
			}
			resumeMs = append(resumeMs, float64(back.Sub(noticed))/1e6)
			outageMs = append(outageMs, float64(back.Sub(lostAt))/1e6)
		}
	}
	p := func(v []float64, q float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[min(len(s)-1, int(q*float64(len(s))))]
	}
	fmt.Fprintf(out, "resume (noticed to back)   p50 %7.1f ms  p99 %7.1f ms\n", p(resumeMs, 0.5), p(resumeMs, 0.99))
	fmt.Fprintf(out, "outage (path lost to back) p50 %7.1f ms  p99 %7.1f ms  (the idle timeout, %v, is most of it)\n", p(outageMs, 0.5), p(outageMs, 0.99), lim.IdleTimeout)
	fmt.Fprintf(out, "fresh Dial, new ticket     p50 %7.1f ms  p99 %7.1f ms  (the game server's own reconnect, without resuming)\n", p(freshMs, 0.5), p(freshMs, 0.99))
	fmt.Fprintln(out, harness.Result("reconnect",
		"mode", "resume", "trials", 2*trials,
		"resume_ms_p50", fmt.Sprintf("%.1f", p(resumeMs, 0.5)),
		"resume_ms_p99", fmt.Sprintf("%.1f", p(resumeMs, 0.99)),
		"outage_ms_p50", fmt.Sprintf("%.1f", p(outageMs, 0.5)),
		"outage_ms_p99", fmt.Sprintf("%.1f", p(outageMs, 0.99)),
		"idle_timeout_ms", lim.IdleTimeout.Milliseconds(),
		"baseline_dial_ms_p50", fmt.Sprintf("%.1f", p(freshMs, 0.5)),
		"baseline_dial_ms_p99", fmt.Sprintf("%.1f", p(freshMs, 0.99)),
	))
	return nil
}
