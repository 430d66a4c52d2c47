//go:build !js

// Package mmbench is the matchmaker scenario: a simulated population of
// players with known true skills queues for 5v5 over a real NATS server,
// matched by three matchmaker processes (one killed mid-run) that place
// the matches on cluster nodes in three regions; the same arrivals go
// through first-come-first-served matching in the same run.
//
// MMBENCH_PROFILE=dir writes a CPU profile of each process there;
// MMBENCH_DEBUG=1 lists the measured tickets still in line at the end.
package mmbench

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/matchmaker"
)

// WorkerEnv marks a child process that runs one matchmaker Service: the
// bench command runs Worker when it finds it set.
const WorkerEnv = "TONGBU_BENCH_MATCHMAKER"

func init() {
	harness.Register("matchmaker",
		"5v5 matchmaking over NATS: 3 matchmaker processes (one killed), parties, regions, builds; beside first-come-first-served",
		Run)
}

// The population.
var (
	regions = []string{"eu", "us", "as"}
	// base round trips between regions, ms.
	between = map[[2]string]int{{"eu", "us"}: 90, {"eu", "as"}: 180, {"us", "as"}: 150}
	// party sizes 1..5 and their shares.
	partyShare  = []float64{0.5, 0.2, 0.12, 0.1, 0.08}
	regionShare = []float64{0.45, 0.35, 0.2}
)

const (
	mode       = "5v5"
	liveBuild  = "1.4"
	newBuild   = "1.5"
	skillMean  = 25.0
	skillSD    = 25.0 / 3
	roomLength = 20 * time.Second // a match holds its room this long
)

// Run is the scenario.
func Run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("matchmaker", flag.ContinueOnError)
	fs.SetOutput(out)
	rates := fs.String("rates", "50,500,5000", "arrival rates to run, tickets a second")
	seconds := fs.Float64("seconds", 30, "seconds of arrivals measured at each rate (and matchmaker)")
	tail := fs.Float64("tail", 15, "seconds of arrivals after them, so that the last measured tickets find partners")
	seed := fs.Uint64("seed", 1, "population seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if dir := os.Getenv("MMBENCH_PROFILE"); dir != "" { // and of the bench's queues
		f, err := os.Create(dir + "/queues.prof")
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: 8 << 20})
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("NATS server not ready")
	}
	defer ns.Shutdown()
	nodes, err := startNodes(ns.ClientURL())
	if err != nil {
		return err
	}
	defer nodes.stop()
	fmt.Fprintf(out, "matchmaker: 5v5, parties of 1-5, regions %v, builds %s (85%%) and %s, the switch opened at 60%% of each run, one of 3 matchmaker processes killed at 40%%\n", regions, liveBuild, newBuild)
	fmt.Fprintf(out, "%-9s %-9s %8s %8s %8s %8s %8s %7s %7s %7s %7s %7s %7s %8s %9s\n", "rate/s", "matcher", "wait50", "wait99", "spread90", "pwin90", "rtt90", "split", "mixed", "double", "lost", "left", "orphans", "reroute", "tix/s/cpu")
	for _, r := range strings.Split(*rates, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil || rate <= 0 {
			return fmt.Errorf("rate %q", r)
		}
		var res [2]result
		for i, firstCome := range []bool{false, true} {
			cfg := runConfig{rate: rate, seconds: *seconds, tail: *tail, seed: *seed, firstCome: firstCome, prefix: fmt.Sprintf("bench.mm.%d.%d", int(rate), i)}
			if res[i], err = runOnce(ns.ClientURL(), cfg); err != nil {
				return err
			}
			name := map[bool]string{false: "tongbu", true: "fcfs"}[firstCome]
			m := res[i]
			fmt.Fprintf(out, "%-9.0f %-9s %8.2f %8.2f %8.2f %8.3f %8.0f %7d %7d %7d %7d %7d %7d %8.2f %9.0f\n", rate, name, m.waitP50, m.waitP99,
				m.spreadP90, m.pwinP90, m.rttP90, m.split, m.mixed, m.double, m.lost, m.left, m.heldAtKill, m.rerouted, m.perCore)
		}
		e, b := res[0], res[1]
		fmt.Fprintf(out, "RESULT scenario=matchmaker rate=%.0f seconds=%.0f tickets=%d matches=%d wait_p50_s=%.2f wait_p99_s=%.2f skill_spread_p90=%.2f predicted_win_p90=%.3f rtt_worst_p90_ms=%.0f party_split=%d build_mixed=%d double_matched=%d lost_tickets=%d waiting_at_end=%d held_by_killed=%d rerouted_s=%.2f tickets_per_s_per_core=%.0f "+
			"baseline_wait_p50_s=%.2f baseline_wait_p99_s=%.2f baseline_skill_spread_p90=%.2f baseline_predicted_win_p90=%.3f baseline_rtt_worst_p90_ms=%.0f baseline_party_split=%d baseline_build_mixed=%d baseline_double_matched=%d baseline_lost_tickets=%d baseline_tickets_per_s_per_core=%.0f\n",
			rate, *seconds, e.tickets, e.matches, e.waitP50, e.waitP99, e.spreadP90, e.pwinP90, e.rttP90, e.split, e.mixed, e.double, e.lost, e.left, e.heldAtKill, e.rerouted, e.perCore,
			b.waitP50, b.waitP99, b.spreadP90, b.pwinP90, b.rttP90, b.split, b.mixed, b.double, b.lost, b.perCore)
	}
	return nil
}

// nodes are the cluster's nodes: two a region, rooms closed after
// roomLength.
type nodeSet struct {
	ncs   []*nats.Conn
	nodes []*cluster.Node
	done  chan struct{}
}

func startNodes(url string) (*nodeSet, error) {
	s := &nodeSet{done: make(chan struct{})}
	for _, r := range regions {
		for i := range 2 {
			nc, err := nats.Connect(url)
			if err != nil {
				return nil, err
			}
			id := fmt.Sprintf("%s-%d", r, i+1)
			var node *cluster.Node
			var mu sync.Mutex
			host := func(req cluster.RoomRequest) (map[string]string, error) {
				t := make(map[string]string, len(req.Players))
				for _, p := range req.Players {
					t[p] = req.Room + "/" + p
				}
				go func() {
					select {
					case <-time.After(roomLength):
						mu.Lock()
						n := node
						mu.Unlock()
						n.Closed(req.Room)
					case <-s.done:
					}
				}()
				return t, nil
			}
			builds := []string{liveBuild, newBuild}
			n, err := cluster.Join(nc, cluster.NodeInfo{ID: id, URL: "https://" + id + ".bench", Capacity: cluster.MaxCapacity, Region: r, Builds: builds}, host,
				&cluster.Options{Heartbeat: 250 * time.Millisecond, Prefix: "bench.cluster", Secret: benchSecret})
			if err != nil {
				return nil, err
			}
			mu.Lock()
			node = n
			mu.Unlock()
			s.ncs, s.nodes = append(s.ncs, nc), append(s.nodes, n)
		}
	}
	return s, nil
}

func (s *nodeSet) stop() {
	close(s.done)
	for i, n := range s.nodes {
		n.Leave()
		s.ncs[i].Close()
	}
}

type runConfig struct {
	rate, seconds, tail float64
	seed                uint64
	firstCome           bool
	prefix              string
}

// result is one run's figures.
type result struct {
	tickets, matches                    int
	waitP50, waitP99                    float64
	spreadP90, pwinP90, rttP90, perCore float64
	split, mixed, double, lost, left    int
	heldAtKill                          int     // tickets the killed matchmaker held
	rerouted                            float64 // seconds until all of them were held elsewhere (-1: never)
}

// player is a simulated player: its true skill, and what the matchmaker
// sees.
type player struct {
	skill  float64
	rating matchmaker.Rating
}

// sent is a ticket the bench submitted and what became of it.
type sent struct {
	w        *matchmaker.Wait
	at       time.Time
	measured bool
	done     time.Time
	a        matchmaker.Assignment
	err      error
}

// worker is a matchmaker process.
type worker struct {
	id  string
	cmd *exec.Cmd
	cpu time.Duration // read before it stopped
}

// cpuOf reads a process's CPU time (user and system) from /proc.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond // USER_HZ 100
}

func startWorker(url, id, prefix string, firstCome bool) (*worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-nats", url, "-id", id, "-prefix", prefix, "-first-come="+strconv.FormatBool(firstCome))
	cmd.Env = append(os.Environ(), WorkerEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("matchmaker worker %s: %q %v", id, line, err)
	}
	go io.Copy(io.Discard, out)
	return &worker{id: id, cmd: cmd}, nil
}

func (w *worker) stop(kill bool) {
	w.cpu = cpuOf(w.cmd.Process.Pid)
	if kill {
		w.cmd.Process.Signal(syscall.SIGKILL)
	} else {
		w.cmd.Process.Signal(syscall.SIGTERM)
	}
	w.cmd.Wait()
}

// Worker runs one matchmaker Service until SIGTERM: the child process of
// the scenario.
func Worker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	url := fs.String("nats", "", "")
	id := fs.String("id", "", "")
	prefix := fs.String("prefix", "", "")
	firstCome := fs.Bool("first-come", false, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	nc, err := nats.Connect(*url)
	if err != nil {
		return err
	}
	defer nc.Close()
	svc, err := matchmaker.Serve(nc, matchmaker.Config{FirstCome: *firstCome, Timeout: 60 * time.Second,
		Modes: []matchmaker.Mode{{Name: mode, Teams: 2, TeamSize: 5}}},
		&matchmaker.Options{ID: *id, Prefix: *prefix, Heartbeat: 250 * time.Millisecond, Cluster: &cluster.Options{Prefix: "bench.cluster", Heartbeat: 250 * time.Millisecond, Secret: benchSecret}})
	if err != nil {
		return err
	}
	if dir := os.Getenv("MMBENCH_PROFILE"); dir != "" { // a CPU profile of each matchmaker process
		f, err := os.Create(fmt.Sprintf("%s/%s-%d.prof", dir, *id, os.Getpid()))
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return svc.Close()
}

// benchSecret seals the bench cluster's messages: every process of it
// (nodes, matchmakers, lobbies) holds it.
var benchSecret = []byte("the matchmaker bench's cluster secret")

// runOnce runs one rate through one kind of matching.
func runOnce(url string, cfg runConfig) (result, error) {
	var workers []*worker
	for i := range 3 {
		w, err := startWorker(url, fmt.Sprintf("mm-%d", i+1), cfg.prefix, cfg.firstCome)
		if err != nil {
			return result{}, err
		}
		workers = append(workers, w)
	}
	opts := &matchmaker.Options{Prefix: cfg.prefix, Misses: 4, RequestTimeout: 3 * time.Second, Unavailable: 20 * time.Second, Secret: benchSecret}
	var queues []*matchmaker.Queue
	for range 2 { // two lobbies
		nc, err := nats.Connect(url)
		if err != nil {
			return result{}, err
		}
		defer nc.Close()
		q, err := matchmaker.NewQueue(nc, opts)
		if err != nil {
			return result{}, err
		}
		defer q.Close()
		queues = append(queues, q)
	}
	ctl, err := nats.Connect(url)
	if err != nil {
		return result{}, err
	}
	defer ctl.Close()
	matchmaker.SetSwitches(ctl, nil, opts)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) { // the queues hear the matchmakers
		heard := 0
		for _, q := range queues {
			if len(q.Services()) == len(workers) {
				heard++
			}
		}
		if heard == len(queues) {
			break
		}
		if time.Now().After(deadline) {
			return result{}, errors.New("the queues did not hear the three matchmakers in 10 s")
		}
	}

	rng := rand.New(rand.NewPCG(cfg.seed, uint64(cfg.rate)))
	players := map[string]player{}
	var sents []*sent
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	measureEnd := start.Add(time.Duration(cfg.seconds * float64(time.Second)))
	end := measureEnd.Add(time.Duration(cfg.tail * float64(time.Second)))
	killAt := start.Add(time.Duration(0.4 * cfg.seconds * float64(time.Second)))
	switchAt := start.Add(time.Duration(0.6 * cfg.seconds * float64(time.Second)))
	var switchedAt, killedAt time.Time
	killed := ""
	var orphans []*sent // tickets the killed matchmaker held, not yet held elsewhere
	heldAtKill, rerouted := 0, time.Duration(-1)
	tick := 10 * time.Millisecond
	n := 0
	for now := start; now.Before(end); now = now.Add(tick) {
		time.Sleep(time.Until(now))
		if killed == "" && !now.Before(killAt) {
			// Kill the matchmaker that holds the most tickets in line.
			mu.Lock()
			held := map[string][]*sent{}
			for _, s := range sents {
				if s.done.IsZero() {
					if h := s.w.Service(); h != "" {
						held[h] = append(held[h], s)
					}
				}
			}
			mu.Unlock()
			victim := workers[0]
			for _, w := range workers {
				if len(held[w.id]) > len(held[victim.id]) {
					victim = w
				}
			}
			victim.stop(true)
			killed, killedAt, orphans = victim.id, time.Now(), held[victim.id]
			heldAtKill = len(orphans)
		}
		if killed != "" && len(orphans) > 0 {
			// How long until every ticket it held is held elsewhere (or
			// matched).
			keep := orphans[:0]
			mu.Lock()
			for _, s := range orphans {
				if h := s.w.Service(); s.done.IsZero() && (h == "" || h == killed) {
					keep = append(keep, s)
				}
			}
			mu.Unlock()
			if orphans = keep; len(orphans) == 0 {
				rerouted = time.Since(killedAt)
			}
		}
		if switchedAt.IsZero() && !now.Before(switchAt) {
			mu.Lock()
			switchedAt = time.Now()
			mu.Unlock()
			if err := matchmaker.SetSwitches(ctl, [][2]string{{liveBuild, newBuild}}, opts); err != nil {
				return result{}, err
			}
		}
		for range poisson(rng, cfg.rate*tick.Seconds()) {
			t := newTicket(rng, n, players)
			n++
			w, err := queues[n%len(queues)].Submit(t)
			if err != nil {
				return result{}, err
			}
			s := &sent{w: w, at: time.Now(), measured: now.Before(measureEnd)}
			mu.Lock()
			sents = append(sents, s)
			mu.Unlock()
			wg.Go(func() {
				<-w.Done()
				a, err := w.Result()
				mu.Lock()
				s.done, s.a, s.err = time.Now(), a, err
				mu.Unlock()
			})
		}
	}
	// What is still in line, while the matchmakers still run: a ticket
	// that no live matchmaker holds twice, a second apart (one being sent
	// again has no holder for a moment), is lost.
	mu.Lock()
	res, unheld := evaluate(sents, players, switchedAt, killed)
	mu.Unlock()
	time.Sleep(time.Second)
	mu.Lock()
	for _, s := range unheld {
		if h := s.w.Service(); s.done.IsZero() && (h == "" || h == killed) {
			res.lost++
		}
	}
	mu.Unlock()
	var perCoreTickets int
	for _, w := range workers[1:] {
		w.stop(false)
	}
	var cpu time.Duration
	for _, w := range workers {
		cpu += w.cpu
	}
	for _, q := range queues {
		q.Close()
	}
	wg.Wait()
	for _, s := range sents {
		if s.err == nil && !s.done.IsZero() {
			perCoreTickets++
		}
	}
	if cpu > 0 {
		res.perCore = float64(perCoreTickets) / cpu.Seconds()
	}
	res.heldAtKill, res.rerouted = heldAtKill, rerouted.Seconds()
	return res, nil
}

// poisson draws the arrivals of one tick.
func poisson(rng *rand.Rand, mean float64) int {
	if mean > 30 {
		return max(0, int(math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// pick draws an index by shares.
func pick(rng *rand.Rand, shares []float64) int {
	x := rng.Float64()
	for i, s := range shares {
		if x < s {
			return i
		}
		x -= s
	}
	return len(shares) - 1
}

// newTicket draws a party: its players' true skills and ratings, its home
// region's round trips and its build.
func newTicket(rng *rand.Rand, n int, players map[string]player) matchmaker.Ticket {
	size := 1 + pick(rng, partyShare)
	t := matchmaker.Ticket{Mode: mode, Build: liveBuild, RTT: map[string]int{}}
	if rng.Float64() < 0.15 {
		t.Build = newBuild
	}
	home := regions[pick(rng, regionShare)]
	for _, r := range regions {
		if r == home {
			t.RTT[r] = 10 + rng.IntN(50)
			continue
		}
		base := between[[2]string{home, r}]
		if base == 0 {
			base = between[[2]string{r, home}]
		}
		t.RTT[r] = base + rng.IntN(40)
	}
	for i := range size {
		skill := skillMean + skillSD*rng.NormFloat64()
		r := matchmaker.Rating{Mu: skill, Sigma: 1 + 2*rng.Float64()}
		if rng.Float64() < 0.1 { // a new player: the matchmaker knows nothing yet
			r = matchmaker.NewRating()
		} else {
			r.Mu += r.Sigma * rng.NormFloat64()
		}
		id := fmt.Sprintf("p%d.%d", n, i)
		players[id] = player{skill: skill, rating: r}
		t.Players = append(t.Players, matchmaker.Player{ID: id, Rating: r})
	}
	return t
}

// evaluate computes a run's figures from its tickets.
func evaluate(sents []*sent, players map[string]player, switchedAt time.Time, killed string) (res result, unheld []*sent) {
	var waits, spreads, pwins, rtts []float64
	seenPlayer := map[string]string{} // player -> match
	buildOf := map[string]string{}    // player -> build
	for _, s := range sents {
		t := s.w.Ticket()
		for _, p := range t.Players {
			buildOf[p.ID] = t.Build
		}
	}
	matches := map[string]matchmaker.Assignment{}
	for _, s := range sents {
		if s.done.IsZero() {
			if s.measured && os.Getenv("MMBENCH_DEBUG") != "" {
				t := s.w.Ticket()
				fmt.Fprintf(os.Stderr, "left: %s held by %q since %v build %s party %d mu %.1f sigma %.1f rtt %v\n", t.ID, s.w.Service(), time.Since(s.at).Round(time.Second), t.Build, len(t.Players), t.Players[0].Rating.Mu, t.Players[0].Rating.Sigma, t.RTT)
			}
			if s.measured {
				res.left++
				if h := s.w.Service(); h == killed || h == "" {
					unheld = append(unheld, s) // held by the dead matchmaker, or by none
				}
			}
			continue
		}
		if s.err != nil {
			if errors.Is(s.err, matchmaker.ErrUnavailable) && s.measured {
				res.lost++
			}
			continue
		}
		a := s.a
		if s.measured {
			res.tickets++
			waits = append(waits, s.done.Sub(s.at).Seconds())
		}
		for _, p := range s.w.Ticket().Players {
			if m, ok := seenPlayer[p.ID]; ok && m != a.Match {
				res.double++
			}
			seenPlayer[p.ID] = a.Match
			if a.Team >= len(a.Teams) || !slices.ContainsFunc(a.Teams[a.Team], func(q matchmaker.Player) bool { return q.ID == p.ID }) {
				res.split++
			}
		}
		if _, ok := matches[a.Match]; !ok {
			matches[a.Match] = a
			builds := map[string]bool{}
			for _, team := range a.Teams {
				for _, p := range team {
					builds[buildOf[p.ID]] = true
				}
			}
			if len(builds) > 1 && (switchedAt.IsZero() || s.done.Before(switchedAt)) {
				res.mixed++
			}
			if len(a.Teams) == 2 {
				var sk [2]float64
				var rs [2][]matchmaker.Rating
				for i, team := range a.Teams {
					for _, p := range team {
						sk[i] += players[p.ID].skill / float64(len(team))
						rs[i] = append(rs[i], players[p.ID].rating)
					}
				}
				spreads = append(spreads, math.Abs(sk[0]-sk[1]))
				pwins = append(pwins, math.Abs(0.5-matchmaker.WinProbability(rs[0], rs[1])))
			}
			rtts = append(rtts, float64(a.WorstRTT))
		}
	}
	res.matches = len(matches)
	res.waitP50, res.waitP99 = quantile(waits, 0.5), quantile(waits, 0.99)
	res.spreadP90, res.pwinP90, res.rttP90 = quantile(spreads, 0.9), quantile(pwins, 0.9), quantile(rtts, 0.9)
	return res, unheld
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
