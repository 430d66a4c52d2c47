//go:build !js

package abuse

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/bench/internal/hostile"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

func init() {
	harness.Register("abuse",
		"issue 34's attacks on the data path and the signaling, and issue 57's on the cluster and its credentials, one at a time, beside an honest 10-player room over WebRTC (and, for the cluster's, honest matches): its frame gaps, joins and matches against the same with no attack",
		benchAbuse)
}

func benchAbuse(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("abuse", flag.ContinueOnError)
	seconds := fs.Float64("seconds", 20, "how long each attack runs")
	quiet := fs.Float64("quiet", 10, "how long the room plays before each attack (the baseline)")
	players := fs.Int("players", 10, "honest players in the room")
	all := append(slices.Clone(hostile.Attacks), ClusterAttacks...)
	only := fs.String("attacks", strings.Join(all, ","), "the attacks to run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *seconds <= 0 || *quiet <= 0 || *players < 2 {
		return errors.New("want -seconds > 0, -quiet > 0, -players >= 2")
	}
	var attacks, clusterOnes []string
	for _, a := range strings.Split(*only, ",") {
		switch {
		case slices.Contains(hostile.Attacks, a):
			attacks = append(attacks, a)
		case slices.Contains(ClusterAttacks, a):
			clusterOnes = append(clusterOnes, a)
		default:
			return fmt.Errorf("unknown attack %q (%s)", a, strings.Join(all, ", "))
		}
	}
	if slices.Contains(attacks, hostile.SpoofedRebind) && os.Geteuid() != 0 {
		return errors.New("spoofed_rebind forges source addresses through a raw socket: run as root, or leave it out with -attacks")
	}
	var lines []string
	if len(attacks) > 0 {
		fmt.Fprintf(out, "abuse: a %d-player room at 30 Hz over WebRTC plays %.0fs quiet, then %.0fs under each attack, on a server of its own; an honest spectator joins every 500 ms throughout\n\n",
			*players, *quiet, *seconds)
		fmt.Fprintf(out, "%-16s %10s %10s %12s %8s %10s %8s %6s %10s %10s %9s %9s\n", "attack", "gap p99", "gap max", "quiet max", "dropped", "join p99", "refused", "held", "pkt p99.9", "worst pkt", "rss MiB", "acme lost")
	}
	defer func() {
		fmt.Fprintln(out)
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}()
	for _, a := range attacks {
		r, err := run(a, *players, dur(*quiet), dur(*seconds))
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		fmt.Fprintf(out, "%-16s %8.1fms %8.1fms %10.1fms %8d %8.1fms %8d %6d %7.0fus %8.0fus %+9.1f %5d/%-3d   (%s; server took %d datagrams)\n",
			a, ms(r.attacked.p99), ms(r.attacked.max), ms(r.quiet.max), r.attacked.drops, ms(r.joins.p99), r.joins.refused,
			r.held, float64(r.p999)/1e3, float64(r.worst)/1e3, r.rssDelta, r.acme.unanswered, r.acme.asked, r.sent, r.datagrams)
		lines = append(lines, harness.Result("abuse", "attack", a,
			"honest_gap_p99_ms", ms(r.attacked.p99), "honest_gap_max_ms", ms(r.attacked.max),
			"baseline_honest_gap_max_ms", ms(r.quiet.max), "honest_dropped", r.attacked.drops,
			"honest_join_p99_ms", ms(r.joins.p99), "honest_join_refused", r.joins.refused, "baseline_honest_join_p99_ms", ms(r.quietJoins.p99),
			"honest_acme_unanswered", r.acme.unanswered, "baseline_honest_acme_unanswered", r.quietACME.unanswered,
			"held_chunks_max", r.held, "worst_packet_us", float64(r.worst)/1e3, "packet_p999_us", float64(r.p999)/1e3,
			"rss_mib_delta", r.rssDelta))
	}
	if len(clusterOnes) > 0 {
		fmt.Fprintf(out, "\nabuse, the cluster: two nodes, a matchmaker and a lobby on a NATS server with no permissions; a %d-player room at 30 Hz over WebRTC "+
			"on the first node plays %.0fs quiet, then %.0fs under each attack, while the lobby matches two players every 500 ms and both join their room; "+
			"the attacker holds no cluster secret\n\n", *players, *quiet, *seconds)
		fmt.Fprintf(out, "%-22s %10s %10s %12s %8s %10s %10s %10s %10s %8s %8s %9s %9s\n", "attack", "gap p99", "gap max", "quiet max", "dropped",
			"matches", "quiet", "match p99", "quiet p99", "forged", "dropped", "rewind", "quiet rw")
		say := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
		for _, a := range clusterOnes {
			r, err := runCluster(a, *players, dur(*quiet), dur(*seconds))
			if err != nil {
				return fmt.Errorf("%s: %w", a, err)
			}
			lines = append(lines, clusterReport(say, a, r))
		}
	}
	return nil
}

func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
func ms(d time.Duration) float64  { return float64(d) / float64(time.Millisecond) }

// secretFor is a server's ticket secret, one per attack's server.
func secretFor(attack string) []byte { return []byte("abuse-bench-secret-" + attack + "-0123456789") }

// rssMiB returns this process's resident memory in MiB (Linux; 0
// elsewhere): the server's, for the attackers run in a process of their
// own.
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return float64(pages*uint64(os.Getpagesize())) / (1 << 20)
}

// result is one attack's run.
type result struct {
	quiet, attacked   gaps
	quietJoins, joins joins
	quietACME, acme   asked // the ACME listener's honest answers
	held              int
	worst             time.Duration // the longest one datagram took, the quiet included
	p999              time.Duration // the bucket bound of the 99.9th percentile, the attack only
	rssDelta          float64       // MiB
	datagrams         uint64
	sent              string // what the attacker's process said it sent
}

type gaps struct {
	p99, max time.Duration
	drops    int
}

type joins struct {
	p99     time.Duration
	refused int
}

// run starts a server as tongbu serve would (loopback addresses bounded
// like any other, so the attackers' 127.0.x.y addresses stand for
// networks of their own), the honest room and the joiner, lets them play
// quiet, then runs the attack's process.
func run(attack string, players int, quiet, seconds time.Duration) (result, error) {
	var r result
	nets := transport.ClientNetworks{BoundLoopback: true}
	tcp := ""
	if attack == hostile.IdleTCP {
		tcp = "127.0.0.1:0" // the ICE-TCP port it attacks, where the honest joins come too
	}
	srv, err := engine.NewServer(engine.Config{Secret: secretFor(attack), UDPAddr: "127.0.0.1:0", TCPAddr: tcp, IncludeLoopback: true, ClientNetworks: nets})
	if err != nil {
		return r, err
	}
	url, stop, err := harness.ServeFacing(srv, transport.ListenerConfig{Networks: nets})
	if err != nil {
		return r, err
	}
	defer stop()
	// The ACME http-01 challenges' listener, bounded as tongbu serve
	// bounds it (transport.NewListener, 8 connections a client network
	// and 256 in all); an honest client asks it something every 500 ms.
	acme, stopACME, err := harness.ServeFacingHandler(acmeChallenges(), transport.ListenerConfig{Networks: nets, PerNetwork: 8, MaxConns: 256})
	if err != nil {
		return r, err
	}
	defer stopACME()
	asker := startAsking(acme)
	defer asker.end()
	if _, err := srv.CreateRoom("honest", lockstep.Config{Players: players, Hz: 30}); err != nil {
		return r, err
	}
	if _, err := srv.CreateRoom("attack", lockstep.Config{Players: 4, Hz: 30}); err != nil {
		return r, err
	}
	room, err := play(srv, url, players)
	if err != nil {
		return r, err
	}
	defer room.end()
	network := ""
	if attack == hostile.IdleTCP {
		network = "tcp" // the honest joins come over ICE-TCP, beside the attacker's connections
	}
	j := startJoins(srv, url, network)
	defer j.end()
	time.Sleep(time.Second) // the room settles
	room.window()
	j.window()
	asker.window()
	time.Sleep(quiet)
	r.quiet, r.quietJoins, r.quietACME = room.window(), j.window(), asker.window()

	var tickets strings.Builder
	for i := range hostile.Tickets(attack) {
		tk, _ := srv.Ticket(fmt.Sprintf("mallory%d", i), "attack", engine.RolePlayer, time.Hour)
		fmt.Fprintln(&tickets, tk)
	}
	rss0 := rssMiB()
	dp0 := srv.DataPath()
	args := []string{"abuse", "-attack", attack, "-url", url, "-acme", acme}
	if a := srv.TCPAddr(); a != nil {
		args = append(args, "-tcp", a.String())
	}
	child, err := bots.StartChild(args, tickets.String())
	if err != nil {
		return r, err
	}
	if err := child.WaitReady(time.Minute); err != nil {
		return r, err
	}
	room.window()
	j.window()
	asker.window()
	time.Sleep(seconds)
	r.attacked, r.joins, r.acme = room.window(), j.window(), asker.window()
	line, err := child.Stop("stop\n")
	if err != nil {
		return r, err
	}
	dp := srv.DataPath()
	r.held, r.worst, r.datagrams = dp.HeldChunksMax, dp.MaxDatagram, dp.Datagrams-dp0.Datagrams
	r.p999 = quantileBound(dp0, dp, 0.999)
	r.rssDelta = rssMiB() - rss0
	r.sent = strings.TrimPrefix(line, "DONE ")
	return r, nil
}

// quantileBound returns the upper bound of the histogram bucket that
// holds the q-th quantile of the datagrams between two snapshots (the
// last bucket's: twice the last bound).
func quantileBound(a, b transport.DataPathStats, q float64) time.Duration {
	n := b.Datagrams - a.Datagrams
	if n == 0 {
		return 0
	}
	var cum uint64
	for i := range b.DatagramBuckets {
		cum += b.DatagramBuckets[i] - a.DatagramBuckets[i]
		if float64(cum) >= q*float64(n) {
			if i < len(transport.DatagramBounds) {
				return transport.DatagramBounds[i]
			}
			break
		}
	}
	return 2 * transport.DatagramBounds[len(transport.DatagramBounds)-1]
}

// room is the honest players: one goroutine plays them all, timing the
// gaps between the frames each gets.
type room struct {
	clients []*engine.Client
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	gaps    []time.Duration
	drops   int
}

func play(srv *engine.Server, url string, players int) (*room, error) {
	r := &room{stop: make(chan struct{}), done: make(chan struct{})}
	for i := range players {
		tk, _ := srv.Ticket("honest"+strconv.Itoa(i), "honest", engine.RolePlayer, time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := engine.Dial(ctx, url, tk, &engine.ClientConfig{IncludeLoopback: true})
		cancel()
		if err != nil {
			for _, c := range r.clients {
				c.Close()
			}
			return nil, fmt.Errorf("honest player %d: %w", i, err)
		}
		r.clients = append(r.clients, c)
	}
	go r.loop()
	return r, nil
}

func (r *room) loop() {
	defer close(r.done)
	last := make([]time.Time, len(r.clients))
	gone := make([]bool, len(r.clients))
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		for i, c := range r.clients {
			if gone[i] {
				continue
			}
			select {
			case <-c.Done():
				gone[i] = true
				r.mu.Lock()
				r.drops++
				r.mu.Unlock()
				continue
			default:
			}
			if c.Update(now) != nil || len(c.Lockstep().Advance(now).Frames) == 0 {
				continue
			}
			if !last[i].IsZero() {
				r.mu.Lock()
				r.gaps = append(r.gaps, now.Sub(last[i]))
				r.mu.Unlock()
			}
			last[i] = now
		}
	}
}

// window returns the gaps and drops since the last call.
func (r *room) window() gaps {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := gaps{p99: quantile(r.gaps, 0.99), max: quantile(r.gaps, 1), drops: r.drops}
	r.gaps, r.drops = r.gaps[:0], 0
	return g
}

func (r *room) end() {
	close(r.stop)
	<-r.done
	for _, c := range r.clients {
		c.Close()
	}
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// joiner joins an honest spectator every 500 ms, timing each join and
// counting refusals.
type joiner struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	times   []time.Duration
	refused int
}

func startJoins(srv *engine.Server, url, network string) *joiner {
	j := &joiner{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(j.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-j.stop:
				return
			case <-tick.C:
			}
			tk, _ := srv.Ticket("late"+strconv.Itoa(n), "honest", engine.RoleSpectator, time.Minute)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			began := time.Now()
			c, err := engine.Dial(ctx, url, tk, &engine.ClientConfig{IncludeLoopback: true, Network: network})
			took := time.Since(began)
			cancel()
			j.mu.Lock()
			if err != nil {
				j.refused++
			} else {
				j.times = append(j.times, took)
			}
			j.mu.Unlock()
			if c != nil {
				c.Close()
			}
		}
	}()
	return j
}

func (j *joiner) window() joins {
	j.mu.Lock()
	defer j.mu.Unlock()
	w := joins{p99: quantile(j.times, 0.99), refused: j.refused}
	j.times, j.refused = j.times[:0], 0
	return w
}

func (j *joiner) end() {
	close(j.stop)
	<-j.done
}

// acmeChallenges stands for the http-01 challenges' handler: it answers
// 404 for a token it does not hold, as autocert's does.
func acmeChallenges() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
}

// asker asks the ACME listener for a challenge every 500 ms, as the
// authority does, and counts the requests not answered within 5 s.
type asker struct {
	stop       chan struct{}
	done       chan struct{}
	mu         sync.Mutex
	asked      int
	unanswered int
}

type asked struct{ asked, unanswered int }

func startAsking(url string) *asker {
	a := &asker{stop: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		defer close(a.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-a.stop:
				return
			case <-tick.C:
			}
			resp, err := client.Get(url + "/.well-known/acme-challenge/token")
			a.mu.Lock()
			a.asked++
			if err != nil {
				a.unanswered++
			} else {
				resp.Body.Close()
			}
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *asker) window() asked {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := asked{a.asked, a.unanswered}
	a.asked, a.unanswered = 0, 0
	return w
}

func (a *asker) end() {
	close(a.stop)
	<-a.done
}
