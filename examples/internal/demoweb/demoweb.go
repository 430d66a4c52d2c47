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
// joins with it.
func Join(game string) (*engine.Client, error) {
	origin := js.Global().Get("location").Get("origin").String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", origin+"/demo/ticket?game="+game, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ticket: %s", resp.Status)
	}
	var t struct{ Ticket string }
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return nil, fmt.Errorf("ticket: %w", err)
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
