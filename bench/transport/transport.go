//go:build !js

package transport

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/transport"
)

func init() {
	harness.Register("transport",
		"bots in a second process echo through the server over WebRTC; engine vs pion defaults and the plain-UDP floor",
		benchTransport)
}

type transportLoad struct {
	clients, hz, size int
	seconds           float64
	rounds            int
	profile           string
}

type phaseResult struct {
	name          string
	sent, recv    uint64
	serverMsgs    uint64
	cpu           time.Duration
	heapPerConn   float64 // bytes
	goroutPerConn float64
}

// phase is one server under test and the bots that drive it.
type phase struct {
	name   string
	start  func() (echoServer, error)
	inband bool   // plain pion bots with in-band channels
	stack  string // the engine bots' stack
}

var phases = []phase{
	{"tongbu lean (a socket a core, no goroutine per peer)", func() (echoServer, error) { return startEngineEcho(transport.StackLean, 0) }, false, "lean"},
	{"tongbu pion (mux, ICE-lite, detached, negotiated)", func() (echoServer, error) { return startEngineEcho(transport.StackPion, 1) }, false, "lean"},
	{"pion defaults (no mux, callbacks, in-band)", startPionEcho, true, ""},
	{"udp floor (recvmmsg, sendmmsg on the tick, no crypto, no SCTP)", startUDPFloor, false, "udp"},
	{"tongbu lean-1 (one socket: the lean stack before sockets a core)", func() (echoServer, error) { return startEngineEcho(transport.StackLean, 1) }, false, "lean"},
}

func (p phaseResult) cpuPerMsg() float64 {
	if p.serverMsgs == 0 {
		return 0
	}
	return float64(p.cpu.Microseconds()) / float64(p.serverMsgs)
}

func (p phaseResult) delivered() float64 {
	if p.sent == 0 {
		return 0
	}
	return float64(p.recv) / float64(p.sent)
}

func benchTransport(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("transport", flag.ContinueOnError)
	var load transportLoad
	fs.IntVar(&load.clients, "clients", 200, "bots")
	fs.IntVar(&load.hz, "hz", 30, "messages per second per bot")
	fs.IntVar(&load.size, "size", 100, "message bytes")
	fs.Float64Var(&load.seconds, "seconds", 10, "sending time")
	fs.IntVar(&load.rounds, "rounds", 3, "alternate the two servers this many times and report medians (machines are noisy)")
	fs.StringVar(&load.profile, "cpuprofile", "", "write the server's CPU profile of each phase to `prefix`.lean, .pion and .defaults")
	handshakes := fs.Bool("handshakes", false, "measure new connections per second instead (-clients of them, as fast as they come)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *handshakes {
		return benchHandshakes(load.clients, out)
	}
	if load.clients < 1 || load.hz < 1 || load.size < 4 || load.size > transport.DefaultMaxUnreliable || load.seconds <= 0 || load.rounds < 1 {
		return errors.New("want -clients >= 1, -hz >= 1, 4 <= -size <= 1160, -seconds > 0, -rounds >= 1")
	}
	fmt.Fprintf(out, "transport: %d bots x %d Hz x %d bytes for %gs, echoed by the server (bots in a second process)\n\n",
		load.clients, load.hz, load.size, load.seconds)
	results := make([][]phaseResult, len(phases))
	for round := range load.rounds {
		fmt.Fprintf(out, "round %d:", round+1)
		for i, ph := range phases {
			r, err := runPhase(ph, load)
			if err != nil {
				return fmt.Errorf("%s: %w", ph.name, err)
			}
			results[i] = append(results[i], r)
			fmt.Fprintf(out, "  %s %.2f us/msg", strings.Fields(ph.name)[1], r.cpuPerMsg())
		}
		fmt.Fprintln(out)
	}
	med := make([]phaseResult, len(phases))
	for i := range phases {
		med[i] = medianPhase(results[i])
		// Memory from the first round: later ones start while the pion
		// phases' peers are still being freed.
		med[i].heapPerConn = results[i][0].heapPerConn
	}
	lean, pion, defaults, floor, one := med[0], med[1], med[2], med[3], med[4]
	fmt.Fprintf(out, "\nmedians of %d rounds:\n", load.rounds)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tsent\techoed back\tdelivered\tserver msgs\tcpu us/msg\tKiB/conn\tgoroutines/conn\t")
	for i, p := range med {
		mem, gor := fmt.Sprintf("%.1f", p.heapPerConn/1024), fmt.Sprintf("%.1f", p.goroutPerConn)
		if phases[i].stack == "udp" { // no sessions: nothing per connection to measure
			mem, gor = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%d\t%.2f\t%s\t%s\t\n",
			p.name, p.sent, p.recv, p.delivered(), p.serverMsgs, p.cpuPerMsg(), mem, gor)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncpu us/msg is the server process's user+system time (rusage) per message it received or sent.\n")
	fmt.Fprintf(out, "lean/pion cpu: %.3f (%.1f times less)\n", lean.cpuPerMsg()/pion.cpuPerMsg(), pion.cpuPerMsg()/lean.cpuPerMsg())
	fmt.Fprintf(out, "lean above the udp floor: %.2f us/msg (%.1f times the floor); pion defaults are %.1f times it\n",
		lean.cpuPerMsg()-floor.cpuPerMsg(), lean.cpuPerMsg()/floor.cpuPerMsg(), defaults.cpuPerMsg()/floor.cpuPerMsg())
	fmt.Fprintf(out, "lean on %d sockets (one a core) against one: %.2f against %.2f us/msg (%.2f)\n",
		runtime.GOMAXPROCS(0), lean.cpuPerMsg(), one.cpuPerMsg(), lean.cpuPerMsg()/one.cpuPerMsg())
	fmt.Fprintln(out, harness.Result("transport",
		"clients", load.clients,
		"cpu_us_per_msg", lean.cpuPerMsg(),
		"sockets", runtime.GOMAXPROCS(0),
		"one_socket_cpu_us_per_msg", one.cpuPerMsg(),
		"baseline_cpu_us_per_msg", pion.cpuPerMsg(),
		"pion_defaults_cpu_us_per_msg", defaults.cpuPerMsg(),
		"floor_cpu_us_per_msg", floor.cpuPerMsg(),
		"delivered", lean.delivered(),
		"baseline_delivered", pion.delivered(),
		"kib_per_conn", lean.heapPerConn/1024,
		"baseline_kib_per_conn", pion.heapPerConn/1024,
		"goroutines_per_conn", lean.goroutPerConn,
		"baseline_goroutines_per_conn", pion.goroutPerConn,
	))
	return nil
}

// medianPhase returns the round with the median CPU per message.
func medianPhase(ps []phaseResult) phaseResult {
	sorted := append([]phaseResult(nil), ps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].cpuPerMsg() < sorted[j].cpuPerMsg() })
	return sorted[len(sorted)/2]
}

// echoServer is a running server under test: its signaling URL, a count of
// the messages it received and sent, and a stop function.
type echoServer struct {
	url  string
	msgs *atomic.Uint64
	stop func()
}

// settle waits (up to 10 s) for the previous phase's goroutines to end,
// and returns how many are left.
func settle() int {
	n := runtime.NumGoroutine()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			break
		}
		n = m
	}
	return n
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func runPhase(ph phase, load transportLoad) (phaseResult, error) {
	res := phaseResult{name: ph.name}
	goroutines := settle()
	before := heapInUse()
	srv, err := ph.start()
	if err != nil {
		return res, err
	}
	defer srv.stop()
	exe, err := os.Executable()
	if err != nil {
		return res, err
	}
	args := []string{"-url", srv.url, "-clients", strconv.Itoa(load.clients), "-hz", strconv.Itoa(load.hz),
		"-size", strconv.Itoa(load.size), "-seconds", strconv.FormatFloat(load.seconds, 'f', -1, 64)}
	if ph.inband {
		args = append(args, "-inband")
	} else {
		args = append(args, "-stack", ph.stack)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), harness.BotsEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, err
	}
	exited := make(chan error, 1)
	ready := make(chan struct{})
	done := make(chan [2]uint64, 1)
	go bots.ReadLines(stdout, ready, done, os.Stderr)
	go func() { exited <- cmd.Wait() }()
	kill := func(err error) (phaseResult, error) {
		cmd.Process.Kill()
		<-exited
		return res, err
	}
	select {
	case <-ready:
	case err := <-exited:
		return res, fmt.Errorf("bots exited before connecting: %v", err)
	case <-time.After(5 * time.Minute):
		return kill(errors.New("bots did not connect within 5 minutes"))
	}
	res.heapPerConn = float64(int64(heapInUse())-int64(before)) / float64(load.clients)
	res.goroutPerConn = float64(runtime.NumGoroutine()-goroutines) / float64(load.clients)
	if load.profile != "" {
		stop, err := harness.StartCPUProfile(load.profile + "." + strings.Fields(ph.name)[1]) // the last round's profile
		if err != nil {
			return kill(err)
		}
		defer stop()
	}
	cpu0, msgs0 := harness.CPUTime(), srv.msgs.Load()
	var counts [2]uint64
	select {
	case counts = <-done:
	case err := <-exited:
		return res, fmt.Errorf("bots exited without a result: %v", err)
	case <-time.After(time.Duration(load.seconds*float64(time.Second)) + 2*time.Minute):
		return kill(errors.New("bots did not finish"))
	}
	res.cpu, res.serverMsgs = harness.CPUTime()-cpu0, srv.msgs.Load()-msgs0
	res.sent, res.recv = counts[0], counts[1]
	if err := <-exited; err != nil {
		return res, fmt.Errorf("bots: %w", err)
	}
	return res, nil
}

// echoTickHz is the tick of the engine's echo loop: a fast room.
const echoTickHz = 60

// startUDPFloor runs the plain-UDP floor, echoing on the echo's tick.
func startUDPFloor() (echoServer, error) {
	fl, err := bots.StartFloor(bots.FloorConfig{TickHz: echoTickHz})
	if err != nil {
		return echoServer{}, err
	}
	return echoServer{url: fl.URL, msgs: fl.Msgs, stop: fl.Stop}, nil
}

// startEngineEcho runs the engine's transport server: every message
// received on the unreliable channel is echoed on it at the next tick.
func startEngineEcho(stack transport.Stack, sockets int) (echoServer, error) {
	s, err := transport.NewServer(transport.ServerConfig{UDPAddr: "127.0.0.1:0", IncludeLoopback: true, MaxPending: 256, Stack: stack,
		AcceptQueue: 4096, Sockets: sockets})
	if err != nil {
		return echoServer{}, err
	}
	// One goroutine owns the connections and drains them on its tick, as a
	// room does (DESIGN.md, runtime model); echoes go out on the same tick.
	var msgs atomic.Uint64
	newConns := make(chan transport.Conn, 64)
	stop := make(chan struct{})
	go func() {
		for {
			c, err := s.Accept(context.Background())
			if err != nil {
				return
			}
			newConns <- c
		}
	}()
	go func() {
		var conns []transport.Conn
		tick := time.NewTicker(time.Second / echoTickHz)
		defer tick.Stop()
		for {
			select {
			case c := <-newConns:
				conns = append(conns, c)
			case <-tick.C:
				for _, c := range conns {
					for {
						m, ok := c.TryReceive()
						if !ok {
							break
						}
						msgs.Add(1)
						if c.SendUnreliable(m.Data) == nil {
							msgs.Add(1)
						}
					}
				}
			case <-stop:
				return
			}
		}
	}()
	url, stopHTTP, err := harness.ServeHTTP(s)
	if err != nil {
		s.Close()
		return echoServer{}, err
	}
	return echoServer{url: url, msgs: &msgs, stop: func() { close(stop); stopHTTP(); s.Close() }}, nil
}

// startPionEcho runs a server as pion's examples write one: default
// settings (but loopback candidates, which this machine needs), a socket
// per peer, channels opened in band, messages handled in OnMessage.
func startPionEcho() (echoServer, error) {
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	api := webrtc.NewAPI(webrtc.WithSettingEngine(se))
	var msgs atomic.Uint64
	var pcs []*webrtc.PeerConnection
	var mu = make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offer, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		pc, err := api.NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		mu <- struct{}{}
		pcs = append(pcs, pc)
		<-mu
		pc.OnDataChannel(func(dc *webrtc.DataChannel) {
			dc.OnMessage(func(m webrtc.DataChannelMessage) {
				msgs.Add(1)
				if dc.Send(m.Data) == nil {
					msgs.Add(1)
				}
			})
		})
		if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: string(offer)}); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ans, err := pc.CreateAnswer(nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		g := webrtc.GatheringCompletePromise(pc)
		if err := pc.SetLocalDescription(ans); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		<-g
		w.Header().Set("Content-Type", "application/sdp")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, pc.LocalDescription().SDP)
	})
	url, stopHTTP, err := harness.ServeHTTP(h)
	if err != nil {
		return echoServer{}, err
	}
	return echoServer{url: url, msgs: &msgs, stop: func() {
		stopHTTP()
		mu <- struct{}{}
		for _, pc := range pcs {
			pc.Close()
		}
		<-mu
	}}, nil
}

// benchHandshakes connects n lean clients to a lean server as fast as 16
// dialers at a time can, and reports connections per second of wall time
// and per second of the server's CPU (per core), the pion stack beside.
func benchHandshakes(n int, out io.Writer) error {
	fmt.Fprintf(out, "handshakes: %d lean clients connect, 16 at a time, in this process\n\n", n)
	type hres struct {
		wall, cpu time.Duration
	}
	run := func(stack transport.Stack) (hres, error) {
		srv, err := startEngineEcho(stack, 0)
		if err != nil {
			return hres{}, err
		}
		defer srv.stop()
		var conns []transport.Conn
		var mu = make(chan struct{}, 1)
		sem := make(chan struct{}, 16)
		errc := make(chan error, n)
		cpu0, t0 := harness.CPUTime(), time.Now()
		for range n {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, err := transport.Dial(ctx, srv.url, &transport.ClientConfig{Stack: transport.StackLean})
				if err != nil {
					errc <- err
					return
				}
				mu <- struct{}{}
				conns = append(conns, c)
				<-mu
			}()
		}
		for range cap(sem) {
			sem <- struct{}{}
		}
		r := hres{wall: time.Since(t0), cpu: harness.CPUTime() - cpu0}
		for _, c := range conns {
			c.Close()
		}
		select {
		case err := <-errc:
			return r, err
		default:
		}
		return r, nil
	}
	lean, err := run(transport.StackLean)
	if err != nil {
		return fmt.Errorf("lean: %w", err)
	}
	pion, err := run(transport.StackPion)
	if err != nil {
		return fmt.Errorf("pion: %w", err)
	}
	for _, r := range []struct {
		name string
		r    hres
	}{{"lean", lean}, {"pion", pion}} {
		fmt.Fprintf(out, "%s: %d connections in %v wall, %v CPU (clients included): %.0f/s, %.0f per CPU-second\n",
			r.name, n, r.r.wall.Round(time.Millisecond), r.r.cpu.Round(time.Millisecond),
			float64(n)/r.r.wall.Seconds(), float64(n)/r.r.cpu.Seconds())
	}
	fmt.Fprintln(out, "(client and server share this process: the CPU figure counts both halves of every handshake)")
	fmt.Fprintln(out, harness.Result("transport",
		"clients", n,
		"handshakes_per_s", float64(n)/lean.wall.Seconds(),
		"handshakes_per_cpu_s", float64(n)/lean.cpu.Seconds(),
		"baseline_handshakes_per_s", float64(n)/pion.wall.Seconds(),
		"baseline_handshakes_per_cpu_s", float64(n)/pion.cpu.Seconds(),
	))
	return nil
}
