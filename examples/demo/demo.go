//go:build !js

package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/engine"
	arena "github.com/tongbu/tongbu/examples/arena/game"
	duel "github.com/tongbu/tongbu/examples/duel/game"
	duelview "github.com/tongbu/tongbu/examples/duel/view"
	mmo "github.com/tongbu/tongbu/examples/mmo/world"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
	"github.com/tongbu/tongbu/wasm"
)

// The browser clients `tongbu demo` builds: file name and main package.
var demoClients = []wasm.Target{
	{Name: "arena.wasm", Pkg: "github.com/tongbu/tongbu/examples/arena/web"},
	{Name: "mmo.wasm", Pkg: "github.com/tongbu/tongbu/examples/mmo/web"},
	{Name: "duel.wasm", Pkg: "github.com/tongbu/tongbu/examples/duel/web"},
}

const (
	arenaPlayers = 4 // per demo room: two bots, two seats for people
	arenaBots    = 2
	mmoWorld     = "mmo"
)

// demoConfig is what the demo command's flags set.
type demoConfig struct {
	HTTP      string
	UDP       int
	TCP       string // ICE-TCP port or host:port; "" for none
	PublicIPs []string
	Assets    string // built browser clients; built here unless NoBuild
	NoBuild   bool
	NPCs      int
	MMOBots   int
	Logger    *slog.Logger
}

func demoCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg demoConfig
	fs.StringVar(&cfg.HTTP, "http", "localhost:8080", "HTTP address of the pages and signaling (\":8080\" for every interface)")
	fs.IntVar(&cfg.UDP, "udp", 3478, "UDP port every WebRTC peer uses (0: any free port)")
	fs.StringVar(&cfg.TCP, "tcp", "3478", "TCP port for browsers whose network blocks UDP (0: any free port; empty: none)")
	publicIP := fs.String("public-ip", "", "comma-separated addresses to advertise to browsers on other machines (behind NAT: the public one)")
	fs.StringVar(&cfg.Assets, "assets", "", "directory for the built browser clients (default: the user cache directory)")
	fs.BoolVar(&cfg.NoBuild, "no-build", false, "serve the clients already in -assets without building them")
	fs.IntVar(&cfg.NPCs, "npcs", 0, "NPCs in the MMO world (0: the demo's default)")
	fs.IntVar(&cfg.MMOBots, "bots", 0, "bot players in the MMO world (0: the demo's default)")
	verbose := fs.Bool("v", false, "log every join and leave")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *publicIP != "" {
		cfg.PublicIPs = strings.Split(*publicIP, ",")
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if cfg.Assets == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		cfg.Assets = filepath.Join(dir, "tongbu", "demo")
	}
	if !cfg.NoBuild {
		fmt.Fprintf(stdout, "tongbu demo: building the three browser clients into %s (the first build compiles Ebiten: a minute or more; later ones take seconds)\n", cfg.Assets)
		t0 := time.Now()
		if err := buildDemoClients(context.Background(), cfg.Assets); err != nil {
			fmt.Fprintln(stderr, "tongbu demo:", err)
			return 1
		}
		fmt.Fprintf(stdout, "tongbu demo: built them in %v\n", time.Since(t0).Round(100*time.Millisecond))
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu demo:", err)
		return 1
	}
	d, err := newDemo(cfg)
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "tongbu demo:", err)
		if strings.Contains(err.Error(), "address already in use") {
			fmt.Fprintln(stderr, "tongbu demo: pick another UDP port with -udp (0 for any free one)")
		}
		return 1
	}
	paths := fmt.Sprintf("UDP %s", d.srv.UDPAddr())
	if a := d.srv.TCPAddr(); a != nil {
		paths += fmt.Sprintf(", TCP %s", a)
	}
	fmt.Fprintf(stdout, "tongbu demo: serving the arena, duel and MMO demos with bots (%s)\n", paths)
	fmt.Fprintf(stdout, "tongbu demo: open http://%s/ in a browser (Ctrl-C to stop)\n", browsable(ln.Addr()))
	code := runServer(d.srv, ln, stderr)
	d.stop()
	return code
}

// browsable turns a listening address into one a browser can open.
func browsable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// buildDemoClients compiles the demo's browser clients into dir, side by
// side.
func buildDemoClients(ctx context.Context, dir string) error {
	return wasm.BuildAll(ctx, dir, demoClients...)
}

// demo is the demo server: an engine.Server with the arena rooms and the
// duel rooms (made as people arrive, each with bots) and the MMO world,
// and the pages.
type demo struct {
	cfg    demoConfig
	srv    *engine.Server
	bots   *memnet.Network // in-process bots connect over it
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	guests atomic.Uint64

	mu     sync.Mutex
	arenas []*arenaRoom // arena and duel rooms
	nextID int
	mmo    *mmo.Demo // set on the world's worker
	lobby  *lobby    // the arena's Play button (matchmaking.go)
	// botFrame, when set, sees every arena frame a bot plays and the state
	// hash after it, and every confirmed hash of a duel bot: the browser
	// tests compare them with the pages'.
	botFrame func(room string, slot, frame int, hash uint64)
}

type arenaRoom struct {
	room    *engine.Room
	game    string // "arena" or "duel"
	bots    int
	seats   int // people given a ticket
	stop    context.CancelFunc
	emptyAt time.Time // when it was last seen with no person connected
}

func newDemo(cfg demoConfig) (*demo, error) {
	secret := make([]byte, 32)
	rand.Read(secret)
	d := &demo{cfg: cfg, bots: memnet.New(uint64(time.Now().UnixNano()))}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	var err error
	if d.lobby, err = newLobby(d); err != nil {
		return nil, err
	}
	tcpAddr := cfg.TCP
	if tcpAddr != "" && !strings.Contains(tcpAddr, ":") {
		tcpAddr = ":" + tcpAddr
	}
	srv, err := engine.NewServer(engine.Config{
		Secret: secret, UDPAddr: fmt.Sprintf(":%d", cfg.UDP), TCPAddr: tcpAddr, PublicIPs: cfg.PublicIPs,
		IncludeLoopback: true, AllowedOrigins: []string{"*"}, Logger: cfg.Logger,
		Assets: d.handler(),
	})
	if err != nil {
		return nil, err
	}
	d.srv = srv
	if err := d.startMMO(); err != nil {
		srv.Shutdown(context.Background())
		return nil, err
	}
	d.wg.Add(2)
	go d.recycle()
	go func() {
		defer d.wg.Done()
		d.lobby.run(d.ctx)
	}()
	return d, nil
}

func (d *demo) stop() {
	d.cancel()
	d.wg.Wait()
}

// startMMO creates the interest world, populated by the mmo example on
// the world's worker at its first tick.
func (d *demo) startMMO() error {
	fwd := &demoSender{}
	_, err := d.srv.CreateWorld(mmoWorld, engine.WorldConfig{
		Interest: mmo.InterestConfig(interest.Config{}),
		Sender:   fwd, // packets for the mmo example's own bot clients
		Tick: func(w *interest.World, now time.Time) {
			if d.mmo == nil {
				m, err := mmo.New(mmo.Config{World: w, NPCs: d.cfg.NPCs, Bots: d.cfg.MMOBots, Seed: 1})
				if err != nil {
					d.cfg.Logger.Error("mmo world", "err", err)
					return
				}
				d.mmo, fwd.d = m, m
			}
			d.mmo.Tick(now)
		},
		Join: func(w *interest.World, player string) (interest.ID, error) {
			if d.mmo == nil {
				return 0, errors.New("the world is still starting: try again")
			}
			return d.mmo.SpawnPlayer(player)
		},
		Leave: func(w *interest.World, player string, id interest.ID) {
			if d.mmo != nil {
				d.mmo.Despawn(id)
			}
		},
	})
	return err
}

// demoSender hands the world's packets for the example's bots to it.
type demoSender struct{ d *mmo.Demo }

func (s *demoSender) SendUnreliable(id interest.ID, msg []byte) error {
	if s.d == nil {
		return errors.New("no such player")
	}
	return s.d.SendUnreliable(id, msg)
}

func (s *demoSender) SendReliable(id interest.ID, msg []byte) error {
	if s.d == nil {
		return errors.New("no such player")
	}
	return s.d.SendReliable(id, msg)
}

// arenaTicket seats a person in an arena room with a free seat, making a
// new room (with its bots) when none has one.
func (d *demo) arenaTicket(player string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ar *arenaRoom
	for _, a := range d.arenas {
		if a.game == "arena" && a.seats < arenaPlayers-arenaBots {
			ar = a
			break
		}
	}
	if ar == nil {
		d.nextID++
		name := fmt.Sprintf("arena-%d", d.nextID)
		cfg := arena.RoomConfig(arenaPlayers)
		// The room runs the game too: its hash names the player who
		// diverges, its kills are the reference for the players' reports,
		// and a player who reloads is caught up from its snapshot.
		cfg.Simulation = arena.Simulation(arenaPlayers, arena.RoomSeed(name))
		cfg.VerifyEvents = true // every client reports its kills; the room names one that differs
		room, err := d.srv.CreateRoom(name, cfg)
		if err != nil {
			return "", err
		}
		ctx, stop := context.WithCancel(d.ctx)
		ar = &arenaRoom{room: room, game: "arena", bots: arenaBots, stop: stop, emptyAt: time.Now()}
		for i := range arenaBots {
			if err := d.startBot(ctx, name, fmt.Sprintf("bot-%d", i+1), d.playArenaBot); err != nil {
				stop()
				room.Close()
				return "", err
			}
		}
		d.arenas = append(d.arenas, ar)
	}
	ar.seats++
	return d.srv.Ticket(player, ar.room.Name(), engine.RolePlayer, time.Minute)
}

// duelTicket makes a duel room for one person and a bot.
func (d *demo) duelTicket(player string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextID++
	name := fmt.Sprintf("duel-%d", d.nextID)
	room, err := d.srv.CreateRoom(name, duel.RoomConfig())
	if err != nil {
		return "", err
	}
	ctx, stop := context.WithCancel(d.ctx)
	if err := d.startBot(ctx, name, "bot", d.playDuelBot); err != nil {
		stop()
		room.Close()
		return "", err
	}
	d.arenas = append(d.arenas, &arenaRoom{room: room, game: "duel", bots: 1, seats: 1, stop: stop, emptyAt: time.Now()})
	return d.srv.Ticket(player, name, engine.RolePlayer, time.Minute)
}

// startBot connects a bot to room over the in-process network and runs
// play with its connection until ctx is done.
func (d *demo) startBot(ctx context.Context, room, name string, play func(context.Context, *engine.Client) error) error {
	cl, err := d.connectBot(ctx, room, name)
	if err != nil {
		return err
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			err := play(ctx, cl)
			cl.Close()
			if ctx.Err() != nil || errors.Is(err, engine.ErrServerClosed) {
				return // the demo is stopping
			}
			// A bot whose connection was closed or whose game failed comes
			// back, with its seat: the room catches it up.
			d.cfg.Logger.Warn("bot stopped; restarting it", "room", room, "bot", name, "err", err)
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(botRestartDelay):
				}
				if cl, err = d.connectBot(ctx, room, name); err == nil {
					break
				}
				d.cfg.Logger.Warn("bot could not rejoin", "room", room, "bot", name, "err", err)
			}
		}
	}()
	return nil
}

// botRestartDelay is how long a stopped bot waits before it rejoins.
const botRestartDelay = time.Second

// connectBot connects a bot to room over the in-process network.
func (d *demo) connectBot(ctx context.Context, room, name string) (*engine.Client, error) {
	c, s := d.bots.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
	tk, err := d.srv.Ticket(name, room, engine.RolePlayer, time.Minute)
	if err == nil {
		err = d.srv.Attach(s, tk)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	cl, err := engine.NewClient(ctx, c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return cl, nil
}

// playArenaBot is a bot's game loop: receive, play the frames through the
// pilot's copy of the game, send what the pilot decides.
func (d *demo) playArenaBot(ctx context.Context, cl *engine.Client) error {
	p, err := arena.NewPilot(cl.LockstepConfig().Players, cl.Slot(), arena.RoomSeed(cl.Target()))
	if err != nil {
		return err
	}
	return everyTick(ctx, func(now time.Time) error {
		if err := cl.Update(now); err != nil {
			return err
		}
		step := cl.Lockstep().Advance(now)
		if step.Snapshot != nil { // a late join, caught up from the room's game
			if err := p.Game().Restore(step.Snapshot); err != nil {
				return err
			}
		}
		for _, f := range step.Frames {
			if err := p.Step(f); err != nil {
				return err
			}
			if every := cl.LockstepConfig().HashEvery; every > 0 && f.Number%every == 0 {
				cl.Lockstep().ReportHash(f.Number, p.Game().Hash()) // desync detection
			}
			if cl.LockstepConfig().VerifyEvents {
				for _, e := range p.Game().Events() { // the kills, for event verification
					if err := cl.Lockstep().ReportEvent(f.Number, e); err != nil {
						return err
					}
				}
			}
			if d.botFrame != nil {
				d.botFrame(cl.Target(), cl.Slot(), f.Number, p.Game().Hash())
			}
			if in, ok := p.Input(); ok {
				cl.Lockstep().Input(now, in)
				cl.Flush(now)
			}
		}
		return nil
	})
}

// playDuelBot is a duel bot's game loop: it plays in the prediction mode,
// as a person's page does, deciding from its own present.
func (d *demo) playDuelBot(ctx context.Context, cl *engine.Client) error {
	room, slot := cl.Target(), cl.Slot()
	s, err := duelview.NewSession(cl, lockstep.RollbackConfig{OnConfirmedHash: func(frame int, hash uint64) {
		if d.botFrame != nil {
			d.botFrame(room, slot, frame, hash)
		}
	}})
	if err != nil {
		return err
	}
	bot := duel.NewBot(slot, uint64(time.Now().UnixNano()))
	return everyTick(ctx, func(now time.Time) error { return s.Tick(now, bot.Input(s.Game())) })
}

// everyTick calls tick 60 times a second, as a game loop does, until ctx
// is done (nil) or tick fails (its error).
func everyTick(ctx context.Context, tick func(now time.Time) error) error {
	tk := time.NewTicker(time.Second / 60)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tk.C:
			if err := tick(now); err != nil {
				return err
			}
		}
	}
}

// recycle closes arena and duel rooms that people have left for a minute.
func (d *demo) recycle() {
	defer d.wg.Done()
	tk := time.NewTicker(5 * time.Second)
	defer tk.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case now := <-tk.C:
			d.mu.Lock()
			keep := d.arenas[:0]
			for _, a := range d.arenas {
				if a.room.Connected() > a.bots {
					a.emptyAt = now
				}
				if now.Sub(a.emptyAt) > time.Minute {
					a.stop()
					a.room.Close()
					continue
				}
				keep = append(keep, a)
			}
			d.arenas = keep
			d.mu.Unlock()
		}
	}
}

// handler serves the demo's pages, the built clients and the ticket
// endpoint (the demo plays the game server that issues tickets).
func (d *demo) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		indexTmpl.Execute(w, nil)
	})
	for _, p := range []struct{ path, title, file string }{
		{"/arena.html", "tongbu arena (lockstep)", "arena.wasm"},
		{"/mmo.html", "tongbu mmo (interest)", "mmo.wasm"},
		{"/duel.html", "tongbu duel (rollback)", "duel.wasm"},
	} {
		page := wasm.Page(p.title, p.file)
		mux.HandleFunc("GET "+p.path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(page)
		})
	}
	files := wasm.Files(d.cfg.Assets) // gzip to browsers that take it
	for _, f := range []string{"/arena.wasm", "/mmo.wasm", "/duel.wasm", "/wasm_exec.js", "/favicon.ico"} {
		mux.Handle("GET "+f, files)
	}
	mux.HandleFunc("GET /demo/ticket", d.serveTicket)
	mux.HandleFunc("GET /demo/queue", func(w http.ResponseWriter, r *http.Request) { d.lobby.serveQueue(w, r) })
	mux.HandleFunc("GET /demo/status", d.serveStatus)
	return mux
}

// DemoTicket is the ticket endpoint's answer.
type demoTicket struct {
	Ticket string `json:"ticket"`
	Player string `json:"player"`
	Game   string `json:"game"`
}

func (d *demo) serveTicket(w http.ResponseWriter, r *http.Request) {
	game := r.URL.Query().Get("game")
	player := fmt.Sprintf("guest-%d", d.guests.Add(1))
	var tk string
	var err error
	switch game {
	case "arena":
		tk, err = d.arenaTicket(player)
	case "mmo":
		tk, err = d.srv.Ticket(player, mmoWorld, engine.RolePlayer, time.Minute)
	case "duel":
		tk, err = d.duelTicket(player)
	default:
		http.Error(w, "game must be arena, mmo or duel", http.StatusBadRequest)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(demoTicket{Ticket: tk, Player: player, Game: game})
}

// serveStatus reports the demo's rooms and world, for people and tests.
func (d *demo) serveStatus(w http.ResponseWriter, r *http.Request) {
	type room struct {
		Name      string `json:"name"`
		Connected int    `json:"connected"`
		Frames    int    `json:"frames"`
	}
	st := struct {
		Arenas []room     `json:"arenas"`
		MMO    *mmo.Stats `json:"mmo"`
	}{MMO: d.mmoStatus()}
	d.mu.Lock()
	for _, a := range d.arenas {
		st.Arenas = append(st.Arenas, room{a.room.Name(), a.room.Connected(), a.room.Stats().Frames})
	}
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

// mmoStatus asks the MMO world's worker, which owns the demo, for its
// counters; nil while the world is starting or busy for over a second.
func (d *demo) mmoStatus() *mmo.Stats {
	w, ok := d.srv.World(mmoWorld)
	if !ok {
		return nil
	}
	ch := make(chan *mmo.Stats, 1)
	w.Do(func(*interest.World) {
		if d.mmo == nil {
			ch <- nil
			return
		}
		st := d.mmo.Stats()
		ch <- &st
	})
	select {
	case st := <-ch:
		return st
	case <-time.After(time.Second):
		return nil
	}
}

var indexTmpl = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tongbu demo</title>
<style>body{font:16px system-ui,sans-serif;max-width:44em;margin:3em auto;background:#101418;color:#d8dee9}
a{color:#88c0d0}li{margin:.6em 0}</style></head><body>
<h1>tongbu demo</h1>
<ul>
<li><a href="arena.html">Arena</a>: lockstep through the relay. Two bots and up to two people
per room; open the page twice to play each other. WASD or arrows to move, the mouse to aim,
click or space to shoot. <a href="arena.html?queue"><b>Play</b></a>: the matchmaker puts you in
a free-for-all of four with bots rated near you.</li>
<li><a href="duel.html">Duel</a>: rollback. A fighting game at 60 frames a second against a
bot: your own moves show at once, the bot's are predicted and corrected when the relay's frames
arrive. A/D to walk, J or space to jab (9 frames of startup, 2 active, 13 of recovery), K to guard.</li>
<li><a href="mmo.html">MMO</a>: interest management over a region grid. Thousands of NPCs and
bot players; move with WASD, arrows or a click. The overlay shows the region grid, your 3x3
range and the bytes per second.</li>
</ul>
<p><a href="metrics">metrics</a> · <a href="demo/status">status</a></p>
</body></html>
`))
