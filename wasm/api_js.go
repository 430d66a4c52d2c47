//go:build js && wasm

package wasm

import (
	"context"
	"sync"
	"syscall/js"
	"time"

	"github.com/tongbu/tongbu/engine"
)

// session is the page's one connection, driven by a ticker goroutine.
type session struct {
	mu      sync.Mutex
	state   string // "idle", "connecting", "connected", "reconnecting", "closed"
	err     string
	resumes int           // connections lost and resumed
	away    time.Duration // how long the last resume took
	client  *engine.Client
	frame   int
	play    string
	depth   float64
	inputs  [][]byte
}

// Expose installs the JavaScript API as the global object name (usually
// "tongbu") and returns; keep the program alive afterwards (select {}).
func Expose(name string) {
	s := &session{state: "idle"}
	api := js.Global().Get("Object").New()
	api.Set("connect", js.FuncOf(s.connect))
	api.Set("status", js.FuncOf(func(js.Value, []js.Value) any { return s.status() }))
	api.Set("stats", js.FuncOf(func(js.Value, []js.Value) any { return s.stats() }))
	api.Set("input", js.FuncOf(s.input))
	api.Set("measureRegions", js.FuncOf(measureRegions))
	api.Set("close", js.FuncOf(func(js.Value, []js.Value) any {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.client != nil {
			s.client.Close()
			s.client = nil
			s.state = "closed"
		}
		return nil
	}))
	js.Global().Set(name, api)
}

// connect(url, ticket[, options]) returns a promise settled when the
// join is done. options.idleTimeoutMs sets the connection's idle timeout,
// which must be the server's (engine.Config.Limits); options.build names
// the game build the page runs (engine.ClientConfig.Build), for a server
// that serves only some.
func (s *session) connect(_ js.Value, args []js.Value) any {
	if len(args) < 2 {
		return rejected("connect(url, ticket[, options])")
	}
	url, ticket := args[0].String(), args[1].String()
	cfg := &engine.ClientConfig{OnConnection: s.connection}
	if len(args) > 2 && args[2].Type() == js.TypeObject {
		if v := args[2].Get("idleTimeoutMs"); v.Type() == js.TypeNumber {
			cfg.Limits.IdleTimeout = time.Duration(v.Float() * float64(time.Millisecond))
		}
		if v := args[2].Get("build"); v.Type() == js.TypeString {
			cfg.Build = v.String()
		}
	}
	return js.Global().Get("Promise").New(js.FuncOf(func(_ js.Value, pargs []js.Value) any {
		resolve, reject := pargs[0], pargs[1]
		s.mu.Lock()
		if s.state == "connecting" || s.state == "connected" {
			s.mu.Unlock()
			reject.Invoke("already " + s.state)
			return nil
		}
		s.state, s.err = "connecting", ""
		s.mu.Unlock()
		go func() { // a blocking call must not run on the JS event loop
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := engine.Dial(ctx, url, ticket, cfg)
			s.mu.Lock()
			if err != nil {
				s.state, s.err = "closed", err.Error()
				s.mu.Unlock()
				reject.Invoke(err.Error())
				return
			}
			s.state, s.client = "connected", c
			s.mu.Unlock()
			resolve.Invoke(c.Mode().String())
			s.run(c)
		}()
		return nil
	}))
}

// measureRegions([{region, url}, ...][, {pings}]) returns a promise of
// [{region, node, rttMs, jitterMs, loss, over, error}], one per region
// (engine.MeasureRegions: over UDP on the game's port by STUN probes, or
// over HTTP where that port does not answer), for the page to pass to
// its lobby as the player's round trips.
func measureRegions(_ js.Value, args []js.Value) any {
	if len(args) < 1 || args[0].Type() != js.TypeObject {
		return rejected("measureRegions([{region, url}, ...][, {pings}])")
	}
	var nodes []engine.RegionNode
	for i := range args[0].Length() {
		n := args[0].Index(i)
		if n.Type() != js.TypeObject || n.Get("region").Type() != js.TypeString || n.Get("url").Type() != js.TypeString {
			return rejected("measureRegions: each node is {region, url}")
		}
		nodes = append(nodes, engine.RegionNode{Region: n.Get("region").String(), URL: n.Get("url").String()})
	}
	cfg := &engine.MeasureConfig{}
	if len(args) > 1 && args[1].Type() == js.TypeObject {
		if v := args[1].Get("pings"); v.Type() == js.TypeNumber {
			cfg.Pings = min(max(v.Int(), 1), 100)
		}
	}
	return js.Global().Get("Promise").New(js.FuncOf(func(_ js.Value, pargs []js.Value) any {
		resolve, reject := pargs[0], pargs[1]
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pings, err := engine.MeasureRegions(ctx, nodes, cfg)
			if err != nil {
				reject.Invoke(err.Error())
				return
			}
			out := js.Global().Get("Array").New()
			for _, p := range pings {
				o := js.Global().Get("Object").New()
				o.Set("region", p.Region)
				o.Set("node", p.Node)
				o.Set("rttMs", float64(p.RTT)/float64(time.Millisecond))
				o.Set("jitterMs", float64(p.Jitter)/float64(time.Millisecond))
				o.Set("loss", p.Loss)
				o.Set("over", p.Over)
				if p.Err != nil {
					o.Set("error", p.Err.Error())
				}
				out.Call("push", o)
			}
			resolve.Invoke(out)
		}()
		return nil
	}))
}

// run is the session's loop at 60 ticks a second: receive, play out, send.
func (s *session) run(c *engine.Client) {
	tk := time.NewTicker(time.Second / 60)
	defer tk.Stop()
	for now := range tk.C {
		if !s.tick(c, now) {
			return
		}
	}
}

// tick runs one tick under the session's lock: status and stats read the
// mode client, so nothing may touch it concurrently.
func (s *session) tick(c *engine.Client, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != c { // closed by the page, maybe connected again since
		return false
	}
	if ls := c.Lockstep(); ls != nil {
		for _, b := range s.inputs {
			ls.Input(now, b)
		}
		if len(s.inputs) > 0 {
			c.Flush(now)
		}
	}
	s.inputs = nil
	if err := c.Update(now); err != nil {
		s.state, s.err = "closed", err.Error()
		return false
	}
	if ls := c.Lockstep(); ls != nil {
		st := ls.Advance(now)
		if n := len(st.Frames); n > 0 {
			s.frame = st.Frames[n-1].Number
		}
		s.play, s.depth = st.State.String(), st.Depth
	} else {
		c.Interest().Advance(now)
		s.frame = c.Interest().Frame()
	}
	return true
}

// connection follows the connection's life (engine.ClientConfig.OnConnection);
// it runs in Update, under s.mu.
func (s *session) connection(e engine.ConnectionEvent) {
	switch e.State {
	case engine.Reconnecting:
		s.state, s.err = "reconnecting", e.Err.Error()
	case engine.Resumed:
		s.state, s.err = "connected", ""
		s.resumes++
		s.away = e.Away
	case engine.Lost:
		s.state, s.err = "closed", e.Err.Error()
	}
}

func (s *session) input(_ js.Value, args []js.Value) any {
	if len(args) < 1 {
		return nil
	}
	b := make([]byte, args[0].Get("length").Int())
	js.CopyBytesToGo(b, args[0])
	s.mu.Lock()
	if len(s.inputs) < 16 {
		s.inputs = append(s.inputs, b)
	}
	s.mu.Unlock()
	return nil
}

func (s *session) status() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]any{"state": s.state, "error": s.err, "frame": s.frame,
		"resumes": s.resumes, "awayMs": float64(s.away) / 1e6}
	if c := s.client; c != nil {
		m["mode"], m["target"] = c.Mode().String(), c.Target()
		if c.Lockstep() != nil {
			m["slot"], m["play"], m["depth"] = c.Slot(), s.play, s.depth
		} else {
			m["self"], m["known"] = int(c.Entity()), c.Interest().Len()
		}
	}
	return m
}

func (s *session) stats() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		return map[string]any{}
	}
	st := s.client.Stats()
	return map[string]any{
		"rttMs": float64(st.RTT) / 1e6, "sentBytes": st.SentBytes, "recvBytes": st.RecvBytes,
		"sentMessages": st.SentMessages, "recvMessages": st.RecvMessages, "malformed": st.Malformed,
	}
}

func rejected(msg string) js.Value {
	return js.Global().Get("Promise").Call("reject", msg)
}
