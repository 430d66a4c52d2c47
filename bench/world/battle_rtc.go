//go:build !js

package world

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

func init() { battleWebRTC = benchBattleRTC }

// battleRelayIP is where the server says it is: the bots' relay listens
// there, at the server's port, and forwards to the server with the delay.
const battleRelayIP = "127.0.0.2"

// battleRTCModel is the WebRTC run's difference from the in-memory one.
var battleRTCModel = []string{
	"the same world, fight and runners; the server (world, NPCs, the skills' hits) in this process on one core (GOMAXPROCS=1),",
	"  the players bots in a second process, each its own engine.Client on the lean stack, polled at 64 Hz (a browser's 60 frames),",
	"  every datagram through a relay (a process of its own beside the bots, at nice 0) that delays it each way",
	"a command's time is from the fighter's Move or Skill to the poll at which the last other fighter that knew it has it",
	"  (the baseline's: the links, the wait for the tick that broadcasts it, and a poll);",
	"  a runner's block region counts the fighters there (the NPCs' places are the server's, not the bots')",
}

// battleRTC is the WebRTC run's figures: the bots' DONE line and the
// server's window.
type battleRTC struct {
	lost                    int
	botCores                float64
	down, down99, up, rdown float64
	cmd50, cmd99            float64
	cmds, undelivered       int
	ep50, ep99              float64
	eps, gone               int
	relayed, relayLost      uint64
	tick                    harness.Histogram
	cpu, wall               time.Duration
	frames                  int
	join                    time.Duration
}

// benchBattleRTC runs the battle over real WebRTC and prints it beside
// the in-memory run's figures and its baseline's.
func benchBattleRTC(o battleOpts, mem battleFigures, out io.Writer) error {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // the server on one core
	fmt.Fprintf(out, "\nbattle over WebRTC: %d players fighting, %d runners, %d NPCs, 16 Hz, %v each way (a %v round trip); %s;\n",
		o.players, o.runners, o.npcs, o.oneWay, 2*o.oneWay, o.bots)
	fmt.Fprintf(out, "%.0f s warm-up after all joined, then %.0f s measured (wall time)\n", o.warmup, o.seconds)
	for _, l := range battleRTCModel {
		fmt.Fprintln(out, "  "+l)
	}
	r, err := runBattleRTC(o)
	if err != nil {
		return err
	}
	tick99, _ := r.tick.Quantile(0.99)
	tick99 *= 1e3
	hz := interest.Config{}.WithDefaults().Hz
	frame := time.Second / time.Duration(hz)
	// The baseline broadcasts a command in the tick it arrives, with no
	// budget: its time is the two links', the wait for that tick and the
	// receiving client's wait for its next poll.
	baseCmd := 2*o.oneWay + frame + time.Second/bots.BattlePollHz
	fmt.Fprintf(out, "\njoined in %.1f s; window %.1f s, %d frames; bots %.2f cores, %d lost; the relay forwarded %d datagrams, lost %d\n\n",
		r.join.Seconds(), r.wall.Seconds(), r.frames, r.botCores, r.lost, r.relayed, r.relayLost)
	fmt.Fprintf(out, "%-40s %14s %14s %14s\n", "", "WebRTC", "in memory", "JX1 baseline")
	fmt.Fprintf(out, "%-40s %14.2f %14s %14s\n", "server ms per tick, p99", tick99, "", "")
	fmt.Fprintf(out, "%-40s %14.0f %14.0f %14.0f\n", "fighter bytes down a second, mean", r.down, mem.down, mem.baseDown)
	fmt.Fprintf(out, "%-40s %14.0f %14s %14s\n", "fighter bytes down a second, p99", r.down99, "", "")
	fmt.Fprintf(out, "%-40s %14.0f %14s %14s\n", "fighter bytes up a second, mean", r.up, "", "")
	fmt.Fprintf(out, "%-40s %14.0f %14s %14s\n", "command to every other client, p50 ms", r.cmd50, "", "")
	fmt.Fprintf(out, "%-40s %14.0f %14.0f %14.0f\n", "command to every other client, p99 ms", r.cmd99, ms(mem.cmd99), ms(baseCmd))
	fmt.Fprintf(out, "%-40s %14.0f %14s %14s\n", "runner knows a block region, p50 ms", r.ep50, "", "")
	fmt.Fprintf(out, "%-40s %14.0f %14.0f %14s\n", "runner knows a block region, p99 ms", r.ep99, ms(mem.newEntity), censored(mem))
	fmt.Fprintf(out, "\ncommands followed %d, %d not had by every fighter that knew the actor; block regions followed %d, %d left before known\n",
		r.cmds+r.undelivered, r.undelivered, r.eps+r.gone, r.gone)
	fmt.Fprintf(out, "runners' bytes down a second %.0f mean; server %.2f cores\n", r.rdown, r.cpu.Seconds()/max(r.wall.Seconds(), 1e-9))
	fmt.Fprintf(out, "targets: command p99 <= one way + 2 frames (%v), tick p99 <= a quarter frame (%v), bytes <= 1/3 of the baseline's (%.0f)\n",
		o.oneWay+2*frame, frame/4, mem.baseDown/3)
	valid := r.botCores < 0.95 && r.lost == 0
	if !valid {
		fmt.Fprintln(out, "invalid: the bots' process was saturated or lost players; the figures are of a lighter load than asked")
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, harness.Result("battle",
		"transport", "webrtc",
		"players", o.players, "runners", o.runners, "npcs", o.npcs,
		"one_way_ms", ms(o.oneWay),
		"client_down_bps_mean", int64(r.down+0.5),
		"client_down_bps_p99", int64(r.down99+0.5),
		"client_up_bps_mean", int64(r.up+0.5),
		"command_to_others_p99_ms", int64(r.cmd99+0.5),
		"commands_undelivered", r.undelivered,
		"tick_p99_ms", tick99,
		"new_entity_sync_p99_ms", int64(r.ep99+0.5),
		"baseline_client_down_bps_mean", int64(mem.baseDown+0.5),
		"baseline_command_to_others_p99_ms", int64(ms(baseCmd)+0.5),
		"baseline_new_entity_sync_p99_ms", int64(ms(mem.baseNewEntity)+0.5),
		"mem_client_down_bps_mean", int64(mem.down+0.5),
		"bots_cores", r.botCores,
		"valid", valid,
	))
	return nil
}

// censored is the baseline's new-entity figure, marked a lower bound when
// its client left regions it never knew.
func censored(f battleFigures) string {
	s := strconv.FormatInt(int64(ms(f.baseNewEntity)), 10)
	if f.baseCensored > 0 {
		s = ">=" + s
	}
	return s
}

// runBattleRTC serves the battle's world, launches the bots behind their
// relay and measures the window after the warm-up.
func runBattleRTC(o battleOpts) (*battleRTC, error) {
	n := o.players + o.runners
	srv, err := bots.NewServerBehind(n+16, []string{battleRelayIP})
	if err != nil {
		return nil, err
	}
	port := srv.UDPAddr().(*net.UDPAddr).Port
	pop := newBattlePopulation(o)
	w, err := srv.CreateWorld("battle", engine.WorldConfig{Join: pop.join, Tick: pop.npcs.tick})
	if err != nil {
		srv.Shutdown(context.Background())
		return nil, err
	}
	spawned := make(chan error, 1)
	w.Do(func(iw *interest.World) {
		iw.OnAction(func(a interest.Action) { hitInWorld(iw, pop.rng, a) })
		spawned <- pop.npcs.spawnNPCs(iw)
	})
	if err := <-spawned; err != nil {
		srv.Shutdown(context.Background())
		return nil, err
	}
	im, err := bots.StartImpairer(fmt.Sprintf("%s:%d", battleRelayIP, port), fmt.Sprintf("127.0.0.1:%d", port), o.oneWay)
	if err != nil {
		srv.Shutdown(context.Background())
		return nil, fmt.Errorf("relay: %w", err)
	}
	defer im.Kill() // once stopped, a no-op
	args := []string{"-seed", strconv.FormatUint(o.seed, 10), "-fighters", strconv.Itoa(o.players), "-poll", strconv.Itoa(bots.BattlePollHz)}
	bs, err := bots.Start(srv, bots.Spec{Kind: "battle", Args: args, Shape: o.bots, Players: n, TTL: time.Hour, Profile: o.profile,
		Seat: func(i int) (string, string) { return bots.BattleSeat(i, o.players), w.Name() }})
	if err != nil {
		return nil, err
	}
	defer bs.Close()
	r := &battleRTC{join: bs.Join}
	child := bs.Child
	kill := func(err error) (*battleRTC, error) {
		child.Kill()
		return nil, err
	}
	unpin, _, err := o.bots.PinApart(child)
	if err != nil {
		return kill(err)
	}
	defer unpin()
	if err := im.PinWithBots(o.bots); err != nil {
		return kill(err)
	}
	time.Sleep(time.Duration(o.warmup * float64(time.Second)))
	marks := 0
	frames := func() int {
		if marks++; marks == 1 {
			child.Say("MEASURE") // the window's start, for the bots too
		}
		return worldFrame(w)
	}
	win, fr, err := bots.Measure(bs.URL, time.Duration(o.seconds*float64(time.Second)), o.profile, frames, worldTickMetric)
	if err != nil {
		return kill(err)
	}
	r.frames, r.cpu, r.wall = fr[1]-fr[0], win.CPU, win.Wall
	r.tick = win.After.Hist[worldTickMetric].Since(win.Before.Hist[worldTickMetric])
	if err := child.Finish("STOP\n",
		"DONE lost=%d cores=%g down=%g down99=%g up=%g rdown=%g cmd50=%g cmd99=%g cmds=%d undelivered=%d ep50=%g ep99=%g eps=%d gone=%d",
		&r.lost, &r.botCores, &r.down, &r.down99, &r.up, &r.rdown, &r.cmd50, &r.cmd99, &r.cmds, &r.undelivered,
		&r.ep50, &r.ep99, &r.eps, &r.gone); err != nil {
		return nil, err
	}
	r.relayed, r.relayLost, err = im.Stop()
	return r, err
}

// battlePopulation is the WebRTC battle's server side: the NPCs as the
// world scenario's (rtcPopulation) and the players placed by their seats.
type battlePopulation struct {
	o      battleOpts
	rng    *rand.Rand
	npcs   *rtcPopulation
	cfg    interest.Config
	lo, hi interest.Vec
}

func newBattlePopulation(o battleOpts) *battlePopulation {
	p := &battlePopulation{o: o, rng: rand.New(rand.NewPCG(o.seed, 0xba77)), cfg: interest.Config{}.WithDefaults()}
	p.npcs = newRTCPopulation(worldOpts{npcs: o.npcs, seed: o.seed})
	p.lo, p.hi = bots.BattleBlock(p.cfg)
	return p
}

// join places a fighter ("f<i>") in the block and a runner ("r<i>")
// outside it, in camp i%2.
func (p *battlePopulation) join(w *interest.World, player string) (interest.ID, error) {
	i, err := strconv.Atoi(player[min(1, len(player)):])
	if err != nil || !strings.HasPrefix(player, "f") && !strings.HasPrefix(player, "r") {
		return 0, fmt.Errorf("bench battle: player %q", player)
	}
	pos := bots.BattleOutside(p.rng, p.cfg, p.lo, p.hi)
	if player[0] == 'f' {
		pos = interest.Vec{X: p.lo.X + p.rng.Int32N(p.hi.X-p.lo.X+1), Y: p.lo.Y + p.rng.Int32N(p.hi.Y-p.lo.Y+1)}
	}
	return w.Spawn(interest.Player, interest.Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100},
		interest.Display{Appearance: p.rng.Uint32(), Name: player, Camp: uint8(i % 2)})
}

// hitInWorld resolves a skill as the in-memory run's hit does: 2-6 life
// off its target, which is in combat; one below 20 drinks back to full.
func hitInWorld(w *interest.World, rng *rand.Rand, a interest.Action) {
	if a.Kind != interest.ActionSkill || a.Target == 0 {
		return
	}
	hit := func(lg *interest.Logic) {
		life := int(lg.Life) - 2 - rng.IntN(5)
		if life < 20 {
			life = 100
		}
		lg.Life, lg.Combat = uint8(life), true
	}
	_ = w.Update(a.Target, hit)
}
