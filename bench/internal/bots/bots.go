//go:build !js

package bots

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/bench/internal/hostile"
	"github.com/tongbu/tongbu/transport"
)

// botLink is one bot's connection: send on the unreliable channel, count
// what comes back.
type botLink interface {
	send([]byte) error
	drain() uint64 // echoes received since the last call, for bots that poll
	close()
}

// Run is the child process: it connects the bots, prints READY, sends
// at the configured rate for the configured time, and prints the counts.
// With "relay" first it is the relay scenario's bots instead
// (runRelayBots), which take their tickets on stdin.
func Run(args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "relay" {
		return runRelayBots(args[1:], os.Stdin, out)
	}
	if len(args) > 0 && args[0] == "world" {
		return runWorldBots(args[1:], os.Stdin, out)
	}
	if len(args) > 0 && args[0] == "impair" {
		return runImpair(args[1:], os.Stdin, out)
	}
	if len(args) > 0 && args[0] == "battle" {
		return runBattleBots(args[1:], os.Stdin, out)
	}
	if len(args) > 0 && args[0] == "abuse" {
		// The attackers' CPU stands for another machine's: when both want
		// a core, the server runs first (as the relay's bots).
		if err := renice(19); err != nil {
			return err
		}
		return hostile.Run(args[1:], os.Stdin, out)
	}
	fs := flag.NewFlagSet("bots", flag.ContinueOnError)
	url := fs.String("url", "", "signaling URL")
	clients := fs.Int("clients", 10, "bots")
	hz := fs.Int("hz", 30, "messages per second per bot")
	size := fs.Int("size", 100, "message bytes")
	seconds := fs.Float64("seconds", 5, "sending time")
	inband := fs.Bool("inband", false, "plain pion client with in-band channels (baseline)")
	stackName := fs.String("stack", "lean", "the engine bots' client stack: lean or pion; udp: plain datagrams to a udp:// URL (the floor)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw := *stackName == "udp"
	stack := transport.StackLean
	if !raw {
		var err error
		if stack, err = transport.ParseStack(*stackName); err != nil {
			return err
		}
	}
	if path := os.Getenv("TONGBU_BOTS_CPUPROFILE"); path != "" { // for profiling the load generator
		if *inband {
			path += ".inband"
		}
		stop, err := harness.StartCPUProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	var received atomic.Uint64
	links := make([]botLink, *clients)
	sem := make(chan struct{}, 8) // dial a few at a time, as players arrive
	var wg sync.WaitGroup
	var firstErr error
	var errMu sync.Mutex
	for i := range links {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var l botLink
			var err error
			for try := 0; try < 20; try++ {
				switch {
				case raw:
					l, err = dialUDP(*url, &received)
				case *inband:
					l, err = dialInband(*url, &received)
				default:
					l, err = dialEngine(*url, stack)
				}
				var se *transport.SignalingError
				if err == nil || !(errors.As(err, &se) && se.Status == http.StatusTooManyRequests) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errMu.Lock()
				firstErr = errors.Join(firstErr, fmt.Errorf("bot %d: %w", i, err))
				errMu.Unlock()
				return
			}
			links[i] = l
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	fmt.Fprintln(out, "READY")
	// One goroutine drives every bot, as a load generator must to drive
	// thousands: each bot sends on its own schedule (spread over the
	// interval, as real clients are), and the engine bots' echoes are
	// drained on the same loop.
	var sent uint64
	start := time.Now()
	stop := start.Add(time.Duration(*seconds * float64(time.Second)))
	interval := time.Second / time.Duration(*hz)
	next := make([]time.Time, len(links))
	msg := make([]byte, *size)
	for i := range next {
		next[i] = start.Add(interval * time.Duration(i) / time.Duration(len(links)))
	}
	tk := time.NewTicker(2 * time.Millisecond)
	for now := start; now.Before(stop.Add(time.Second)); now = <-tk.C { // a second more for the last echoes
		for i, l := range links {
			if now.Before(stop) && !now.Before(next[i]) {
				binary.LittleEndian.PutUint32(msg, uint32(i))
				if l.send(msg) == nil {
					sent++
				}
				next[i] = next[i].Add(interval)
			}
			received.Add(l.drain())
		}
	}
	tk.Stop()
	fmt.Fprintf(out, "DONE sent=%d received=%d\n", sent, received.Load())
	for _, l := range links {
		l.close()
	}
	return nil
}

// udpBot sends plain datagrams from its own socket; a goroutine counts
// the echoes (the floor's load: the bots' cost is not measured).
type udpBot struct{ c *net.UDPConn }

func dialUDP(url string, received *atomic.Uint64) (botLink, error) {
	addr, ok := strings.CutPrefix(url, "udp://")
	if !ok {
		return nil, fmt.Errorf("-stack udp wants a udp:// URL, not %q", url)
	}
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	c, err := net.DialUDP("udp4", nil, ua)
	if err != nil {
		return nil, err
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			if _, err := c.Read(buf); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue // a refused send surfaces here; keep counting
			}
			received.Add(1)
		}
	}()
	return udpBot{c}, nil
}

func (b udpBot) send(m []byte) error { _, err := b.c.Write(m); return err }
func (b udpBot) close()              { b.c.Close() }
func (b udpBot) drain() uint64       { return 0 } // counted by its reader

type engineBot struct{ c transport.Conn }

func dialEngine(url string, stack transport.Stack) (botLink, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, url, &transport.ClientConfig{IncludeLoopback: true, Stack: stack})
	if err != nil {
		return nil, err
	}
	return engineBot{c}, nil
}

func (b engineBot) send(m []byte) error { return b.c.SendUnreliable(m) }
func (b engineBot) close()              { b.c.Close() }

func (b engineBot) drain() uint64 {
	var n uint64
	for {
		if _, ok := b.c.TryReceive(); !ok {
			return n
		}
		n++
	}
}

// inbandBot is a client as pion's examples write one: default settings,
// channels opened in band, messages read through OnMessage.
type inbandBot struct {
	pc *webrtc.PeerConnection
	dc *webrtc.DataChannel
}

func dialInband(url string, received *atomic.Uint64) (botLink, error) {
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, err
	}
	unordered, none := false, uint16(0)
	dc, err := pc.CreateDataChannel("u", &webrtc.DataChannelInit{Ordered: &unordered, MaxRetransmits: &none})
	if err != nil {
		pc.Close()
		return nil, err
	}
	open := make(chan struct{})
	dc.OnOpen(func() { close(open) })
	dc.OnMessage(func(webrtc.DataChannelMessage) { received.Add(1) })
	if err := signalPion(pc, url); err != nil {
		pc.Close()
		return nil, err
	}
	select {
	case <-open:
	case <-time.After(30 * time.Second):
		pc.Close()
		return nil, errors.New("baseline channel did not open")
	}
	return inbandBot{pc, dc}, nil
}

func (b inbandBot) send(m []byte) error { return b.dc.Send(m) }
func (b inbandBot) close()              { b.pc.Close() }
func (b inbandBot) drain() uint64       { return 0 } // counted in OnMessage

// signalPion does the offer/answer exchange of a plain pion peer.
func signalPion(pc *webrtc.PeerConnection, url string) error {
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		return err
	}
	<-gathered
	resp, err := http.Post(url, "application/sdp", strings.NewReader(pc.LocalDescription().SDP))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &transport.SignalingError{Status: resp.StatusCode, Message: string(body)}
	}
	return pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: string(body)})
}

// ReadLines reads the child's READY and DONE lines.
func ReadLines(r io.Reader, ready chan<- struct{}, done chan<- [2]uint64, other io.Writer) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		var sent, recv uint64
		switch {
		case line == "READY":
			close(ready)
		case strings.HasPrefix(line, "DONE"):
			if _, err := fmt.Sscanf(line, "DONE sent=%d received=%d", &sent, &recv); err == nil {
				done <- [2]uint64{sent, recv}
			}
		default:
			fmt.Fprintln(other, line)
		}
	}
}

// TestMain is the TestMain of a package whose tests run a scenario with
// bots: the scenario starts its own executable, the test binary, as the
// bots' process, which then runs Run instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(harness.BotsEnv) != "" {
		if err := Run(os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bots:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
