//go:build !js

package hostile

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/engine"
)

// The attacks of issue 34, by the names bench abuse prints.
const (
	// HeldFragments: one-byte first fragments of messages that never
	// end, 60 to a datagram, 1,000 datagrams, then a FORWARD-TSN over them
	// all, again and again, under the server's flood limit.
	HeldFragments = "held_fragments"
	// SpoofedRebind: the attacker's own authenticated ICE check, forged
	// from every port of the players' address in turn, 10,000 a second.
	SpoofedRebind = "spoofed_rebind"
	// OneTicket: 300 slow offer bodies that all carry one valid ticket,
	// each reopened as soon as the server ends it (a second after a 429).
	OneTicket = "one_ticket"
	// IdleKeepAlives: 5,000 idle keep-alive connections from 157
	// addresses, 32 each, each reopened a second after the server closes
	// it.
	IdleKeepAlives = "idle_keepalives"
	// IdleTCP (issue 57): 300 connections to the ICE-TCP port from one
	// address that never send a check, each reopened as soon as the
	// server closes it (a reconnect loop).
	IdleTCP = "idle_tcp"
	// IdleACME (issue 57): idle_keepalives against the ACME http-01
	// challenges' listener instead of signaling's.
	IdleACME = "idle_acme"
)

// Attacks lists them in the order bench abuse runs them.
var Attacks = []string{HeldFragments, SpoofedRebind, OneTicket, IdleKeepAlives, IdleTCP, IdleACME}

// Tickets returns how many tickets an attack takes on stdin, and whether
// they are players of the attackers' own room (true) or one ticket of
// any kind (false).
func Tickets(attack string) int {
	switch attack {
	case HeldFragments:
		return 2
	case SpoofedRebind, OneTicket:
		return 1
	}
	return 0
}

// Run is the attacker's process: it reads -attack, -url and -victim,
// then the tickets on stdin (one a line), sets the attack up, prints
// READY, attacks until a line "stop" comes on stdin, and prints "DONE"
// with what it sent.
func Run(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("abuse", flag.ContinueOnError)
	attack := fs.String("attack", "", "the attack: "+strings.Join(Attacks, ", "))
	url := fs.String("url", "", "the server's base URL")
	victim := fs.String("victim", "127.0.0.1", "the honest players' IPv4 address (spoofed_rebind sweeps its ports)")
	tcp := fs.String("tcp", "", "the server's ICE-TCP address (idle_tcp)")
	acme := fs.String("acme", "", "the base URL of the server's ACME http-01 listener (idle_acme)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	var tickets []string
	for len(tickets) < Tickets(*attack) && sc.Scan() {
		tickets = append(tickets, strings.TrimSpace(sc.Text()))
	}
	if len(tickets) < Tickets(*attack) {
		return fmt.Errorf("abuse %s: %d tickets on stdin, want %d", *attack, len(tickets), Tickets(*attack))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sent atomic.Int64
	var wg sync.WaitGroup
	var err error
	switch *attack {
	case HeldFragments:
		err = heldFragments(ctx, &wg, *url, tickets, &sent)
	case SpoofedRebind:
		err = spoofedRebind(ctx, &wg, *url, tickets[0], *victim, &sent)
	case OneTicket:
		oneTicket(ctx, &wg, *url, tickets[0], &sent)
	case IdleKeepAlives:
		idleKeepAlives(ctx, &wg, *url, &sent)
	case IdleTCP:
		idleTCP(ctx, &wg, *tcp, &sent)
	case IdleACME:
		idleKeepAlives(ctx, &wg, *acme, &sent)
	default:
		err = fmt.Errorf("abuse: unknown attack %q (%s)", *attack, strings.Join(Attacks, ", "))
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "READY")
	for sc.Scan() && strings.TrimSpace(sc.Text()) != "stop" {
	}
	cancel()
	wg.Wait()
	fmt.Fprintf(out, "DONE attack=%s sent=%d\n", *attack, sent.Load())
	return nil
}

// heldFragments runs the attack from one peer a ticket; sent counts
// datagrams.
func heldFragments(ctx context.Context, wg *sync.WaitGroup, url string, tickets []string, sent *atomic.Int64) error {
	for _, tk := range tickets {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		p, err := Dial(dctx, url, tk)
		cancel()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.Close()
			// 3,500 datagrams a second: under the server's flood limit
			// (4,000), so that every one is handled rather than dropped.
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for n := 0; ; n++ {
				for i := range 35 {
					var pkt []byte
					if (n*35+i)%1001 == 1000 {
						pkt = p.Packet(p.Forward())
					} else {
						var cs [][]byte
						for range 60 {
							cs = append(cs, p.Data(4|2, 0, 53, []byte{0x42}))
						}
						pkt = p.Packet(cs...)
					}
					if p.Send(pkt) == nil {
						sent.Add(1)
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	return nil
}

// spoofedRebind forges the peer's check from every port of victim's
// address in turn; sent counts forged checks.
func spoofedRebind(ctx context.Context, wg *sync.WaitGroup, url, ticket, victim string, sent *atomic.Int64) error {
	ip, err := netip.ParseAddr(victim)
	if err != nil {
		return err
	}
	sp, err := NewSpoofer()
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	p, err := Dial(dctx, url, ticket)
	cancel()
	if err != nil {
		sp.Close()
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer sp.Close()
		defer p.Close()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		port := uint16(32768)
		for {
			for range 100 { // 10,000 a second
				if sp.Send(netip.AddrPortFrom(ip, port), p.Server(), p.Check()) == nil {
					sent.Add(1)
				}
				if port++; port > 60999 {
					port = 32768
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return nil
}

// attackerAddr is the loopback address of the i-th attacking client
// network: apart from the honest players' 127.0.0.1, as an attacker's
// addresses would be.
func attackerAddr(i int) net.IP { return net.IPv4(127, 0, byte(10+i/250), byte(1+i%250)) }

// oneTicket holds 300 slow offers with the ticket, from 10 addresses (30
// each: under the per-network bound, so that only the per-ticket bound
// stands in the way); sent counts offers opened.
func oneTicket(ctx context.Context, wg *sync.WaitGroup, url, ticket string, sent *atomic.Int64) {
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: attackerAddr(i % 10)}}
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", host)
				if err != nil {
					pause(ctx, 50*time.Millisecond)
					continue
				}
				sent.Add(1)
				fmt.Fprintf(c, "POST /connect HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\nAuthorization: Bearer %s\r\n%s: %d\r\nContent-Length: 100000\r\n\r\nv=0\r\n", ticket, engine.WireHeader, engine.WireVersion)
				ended := make(chan time.Duration, 1)
				go func() { // the server ends it: 429 at once, or 408
					t0 := time.Now()
					io.Copy(io.Discard, c)
					ended <- time.Since(t0)
				}()
				select {
				case <-ctx.Done():
					c.Close()
					<-ended
					return
				case d := <-ended:
					c.Close()
					if d < 100*time.Millisecond {
						// Refused at once (429): back after the second its
						// Retry-After asks, as a flood of refused requests is
						// another attack (TestAbuse's forged tickets).
						pause(ctx, time.Second)
					}
				}
			}
		}()
	}
}

// idleKeepAlives holds 5,000 idle keep-alive connections from 157
// addresses, reopening those the server closes; sent counts connections
// opened.
func idleKeepAlives(ctx context.Context, wg *sync.WaitGroup, url string, sent *atomic.Int64) {
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	const addrs, per = 157, 32
	for a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: attackerAddr(20 + a)}}
			var mu sync.Mutex
			conns := map[net.Conn]struct{}{}
			defer func() {
				mu.Lock()
				for c := range conns {
					c.Close()
				}
				mu.Unlock()
			}()
			open := 0
			lost := make(chan struct{}, per)
			for ctx.Err() == nil {
				for open < per {
					c, err := d.DialContext(ctx, "tcp", host)
					if err != nil {
						break
					}
					sent.Add(1)
					open++
					mu.Lock()
					conns[c] = struct{}{}
					mu.Unlock()
					fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
					go func() {
						io.Copy(io.Discard, c) // until the server closes it
						mu.Lock()
						delete(conns, c)
						mu.Unlock()
						c.Close()
						lost <- struct{}{}
					}()
				}
				select {
				case <-ctx.Done():
				case <-lost:
					open--
					pause(ctx, time.Second) // hold it again: a hold, not a flood
				}
			}
		}()
	}
}

// idleTCP holds 300 silent connections to the ICE-TCP port at addr from
// one address, each redialed at once when the server closes it; sent
// counts connections opened.
func idleTCP(ctx context.Context, wg *sync.WaitGroup, addr string, sent *atomic.Int64) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: attackerAddr(5)}, Timeout: time.Second}
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					pause(ctx, 10*time.Millisecond)
					continue
				}
				sent.Add(1)
				done := make(chan struct{})
				go func() {
					io.Copy(io.Discard, c) // until the server closes it
					close(done)
				}()
				select {
				case <-ctx.Done():
				case <-done:
				}
				c.Close()
			}
		}()
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
