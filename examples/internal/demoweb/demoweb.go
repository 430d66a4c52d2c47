//go:build js

// Package demoweb is what the demo's browser clients share: asking the demo
// server for a ticket and dialing it from the page.
package demoweb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall/js"
	"time"

	"github.com/tongbu/tongbu/engine"
)

// Join asks the page's server for a ticket to game ("arena" or "mmo") and
// joins with it. A page opened with ?queue (the arena's Play button) asks
// the demo's matchmaker instead, with the rating the browser keeps in
// localStorage, and sets window.tongbuMatch to whom it was matched with.
func Join(game string) (*engine.Client, error) {
	origin := js.Global().Get("location").Get("origin").String()
	queue := js.Global().Get("URLSearchParams").New(js.Global().Get("location").Get("search")).Call("has", "queue").Bool()
	timeout := 30 * time.Second
	path := "/demo/ticket?game=" + game
	if queue {
		timeout = 2 * time.Minute
		path = "/demo/queue?game=" + game
		if r := js.Global().Get("localStorage").Call("getItem", "tongbuRating"); r.Truthy() {
			var rating struct{ Mu, Sigma float64 }
			if json.Unmarshal([]byte(r.String()), &rating) == nil && rating.Sigma > 0 {
				path += fmt.Sprintf("&mu=%g&sigma=%g", rating.Mu, rating.Sigma)
			}
		}
		// The round trip to this server, as a game's lobby takes it for
		// matchmaking across regions (the demo has one).
		setStatus("measuring the round trip to the server…")
		mctx, mcancel := context.WithTimeout(context.Background(), 10*time.Second)
		pings, err := engine.MeasureRegions(mctx, []engine.RegionNode{{Region: "local", URL: origin}}, &engine.MeasureConfig{Pings: 5})
		mcancel()
		if ms := engine.RegionRTTs(pings)["local"]; err == nil && ms > 0 {
			path += fmt.Sprintf("&rtt=%d", ms)
		}
		setStatus("finding a match near your rating…")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", origin+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ticket: %s", resp.Status)
	}
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		return nil, fmt.Errorf("ticket: %w", err)
	}
	var t struct{ Ticket string }
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("ticket: %w", err)
	}
	if queue {
		js.Global().Set("tongbuMatch", js.Global().Get("JSON").Call("parse", string(raw)))
		var m struct {
			Others []struct{ Bot bool } `json:"others"`
			RTTMs  int                  `json:"rtt_ms"`
		}
		json.Unmarshal(raw, &m)
		status := fmt.Sprintf("in a match with %d others near your rating", len(m.Others))
		if m.RTTMs > 0 {
			status += fmt.Sprintf(", %d ms from the server", m.RTTMs)
		}
		setStatus(status)
	}
	c, err := engine.Dial(ctx, origin, t.Ticket, nil)
	if err != nil {
		return nil, err
	}
	// A page that goes away closes its connection, so that the server
	// frees the seat at once rather than after the idle timeout.
	js.Global().Get("window").Call("addEventListener", "pagehide", js.FuncOf(func(js.Value, []js.Value) any {
		c.Close()
		return nil
	}))
	return c, nil
}

// setStatus shows text in the page's status line.
func setStatus(text string) {
	if el := js.Global().Get("document").Call("getElementById", "tongbu-status"); el.Truthy() {
		el.Set("textContent", text)
	}
}

// Fail shows err on the page and keeps the program alive.
func Fail(err error) {
	js.Global().Set("tongbuError", err.Error())
	doc := js.Global().Get("document")
	if el := doc.Call("getElementById", "tongbu-status"); el.Truthy() {
		el.Set("textContent", "error: "+err.Error())
	}
	select {}
}

// Status is the connection's state in a word or two, for the overlays.
func Status(err error) string {
	if err != nil {
		return "closed: " + err.Error()
	}
	return "connected"
}
