//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/worlds/game"
	"github.com/tongbu/tongbu/natsbus"
	"github.com/tongbu/tongbu/replica"
	"github.com/tongbu/tongbu/wasm"
)

// lobbyReplica is the name the lobby publishes the guilds under.
const lobbyReplica = "lobby"

// lobbyConfig is the lobby: the page, the players' first places, the
// guilds every world process reads, and the bots.
type lobbyConfig struct {
	NATS   string // the NATS server's URL
	HTTP   string // where the page is served, such as ":8080"
	Assets string // the directory of the page's files (worlds.wasm): "" serves no page
	Bots   int    // bot players, walking between the cells and through the portals
	Secret []byte // the cluster's secret, which seals its messages on NATS: the nodes' too
	Log    *slog.Logger
}

// lobby is the process players meet first. It holds no world: it books
// each player's place in the field's west cell (cluster.JoinWorld), owns
// the guilds and publishes them to the world processes, opens the town's
// lines, and runs the bots.
type lobby struct {
	cfg     lobbyConfig
	nc      *nats.Conn
	dir     *cluster.Directory
	pub     *replica.Publisher
	guilds  *replica.Source[game.Guild, *game.Guild]
	members *replica.Source[game.Member, *game.Member]
	ln      net.Listener
	url     string
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.Mutex // the sources, written by joins and read by the ticker
	joined int
	bots   map[string]*botState
}

// opts are the lobby's cluster options: the cluster's secret.
func (l *lobby) opts() *cluster.Options { return &cluster.Options{Secret: l.cfg.Secret} }

// startLobby starts the lobby and returns once its page is served.
func startLobby(cfg lobbyConfig) (*lobby, error) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &lobby{cfg: cfg, ctx: ctx, stop: cancel, bots: map[string]*botState{}}
	if err := l.start(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *lobby) start() error {
	var err error
	if l.nc, err = nats.Connect(l.cfg.NATS, nats.Name("worlds-lobby")); err != nil {
		return fmt.Errorf("lobby: NATS: %w", err)
	}
	if l.dir, err = cluster.Watch(l.nc, l.opts()); err != nil {
		return err
	}
	bus, err := natsbus.NewSealed(l.nc, l.cfg.Secret) // the guilds travel sealed, as the cluster's messages do
	if err != nil {
		return err
	}
	if l.pub, err = replica.NewPublisher(bus, replica.PublisherConfig{Name: lobbyReplica, Logger: l.cfg.Log}); err != nil {
		return err
	}
	if l.guilds, err = replica.NewSource[game.Guild](l.pub, "guilds"); err != nil {
		return err
	}
	if l.members, err = replica.NewSource[game.Member](l.pub, "members"); err != nil {
		return err
	}
	for id, g := range game.Guilds {
		if err := l.guilds.Set(id, g); err != nil {
			return err
		}
	}
	if err := l.pub.Start(time.Now()); err != nil {
		return err
	}
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		tickEvery(l.ctx, 100*time.Millisecond, func(now time.Time) {
			l.mu.Lock()
			l.pub.Tick(now)
			l.mu.Unlock()
		})
	}()
	go func() {
		defer l.wg.Done()
		l.openTown()
		tickEvery(l.ctx, 2*time.Second, func(time.Time) { l.openTown() })
	}()

	if l.ln, err = net.Listen("tcp", l.cfg.HTTP); err != nil {
		return err
	}
	l.url = "http://" + browsable(l.ln.Addr())
	go engine.HTTPServer("", l.handler()).Serve(l.ln)
	for i := range l.cfg.Bots {
		l.startBot(fmt.Sprintf("bot-%d", i+1))
	}
	return nil
}

// openTown opens the town's first lines where none is placed yet: on
// whichever node has room. More open as players fill them
// (JoinRequest.NewLine).
func (l *lobby) openTown() {
	for n := 1; n <= game.TownLines; n++ {
		name := cluster.Line(game.Town, n)
		if _, ok := l.dir.LocateWorld(name); ok || len(l.dir.Nodes()) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
		p, err := cluster.CreateWorld(ctx, l.nc, cluster.WorldRequest{World: name, Cap: game.TownCap}, l.opts())
		cancel()
		if err == nil {
			l.cfg.Log.Info("lobby: town line opened", "world", name, "node", p.Node)
		} else if !errors.Is(err, cluster.ErrRefused) {
			l.cfg.Log.Info("lobby: town line not opened yet", "world", name, "err", err)
		}
	}
}

// join enrols player in a guild (the one with the fewest members), which
// the world processes learn over the replica, and books its place in the
// field's west cell.
func (l *lobby) join(ctx context.Context, player string) (cluster.Placement, error) {
	l.mu.Lock()
	id := game.PlayerID(player)
	if _, ok := l.members.Get(id); !ok {
		var best uint64
		var bg game.Guild
		l.guilds.Range(func(gid uint64, g game.Guild) bool {
			if best == 0 || g.Members < bg.Members {
				best, bg = gid, g
			}
			return true
		})
		bg.Members++
		l.guilds.Set(best, bg)
		l.members.Set(id, game.Member{Guild: best})
		l.pub.Commit() // at once: the player's world reads it when it spawns
	}
	l.joined++
	l.mu.Unlock()
	first := cluster.CellName(game.Field, 0)
	for { // the field's cell may not be up yet (its node is starting)
		if _, ok := l.dir.LocateWorld(first); ok {
			break
		}
		select {
		case <-ctx.Done():
			return cluster.Placement{}, fmt.Errorf("lobby: world %s is on no live node: %w", first, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return cluster.JoinWorld(ctx, l.nc, l.dir, cluster.JoinRequest{World: first, Player: player}, l.opts())
}

// handler serves the page, tickets and the cluster's directory.
func (l *lobby) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/ticket", l.serveTicket)
	mux.Handle("/cluster", l.dir) // the nodes and their worlds, as JSON
	if l.cfg.Assets != "" {
		page := wasm.Page("tongbu worlds", "worlds.wasm")
		mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(page)
		})
		mux.Handle("/", wasm.Files(l.cfg.Assets))
	}
	return mux
}

// ticketReply is /ticket's answer: where the player goes, and its ticket.
type ticketReply struct {
	Player string `json:"player"`
	World  string `json:"world"`
	URL    string `json:"url"`
	Ticket string `json:"ticket"`
}

// serveTicket books a place for a player of the page: GET
// /ticket?name=NAME (a name is made up when none is given).
func (l *lobby) serveTicket(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" || len(name) > 16 || strings.ContainsFunc(name, func(c rune) bool { return c < '!' || c > '~' }) {
		l.mu.Lock()
		name = fmt.Sprintf("player-%d", l.joined+1)
		l.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	p, err := l.join(ctx, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ticketReply{Player: name, World: p.Room, URL: p.URL, Ticket: p.Tickets[name]})
}

// Close stops the bots and the lobby.
func (l *lobby) Close() {
	l.stop()
	l.wg.Wait()
	if l.ln != nil {
		l.ln.Close()
	}
	if l.pub != nil {
		l.pub.Close()
	}
	if l.dir != nil {
		l.dir.Close()
	}
	if l.nc != nil {
		l.nc.Close()
	}
}

// browsable is a listener's address as a browser on this machine reaches
// it: the unspecified address becomes localhost.
func browsable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
