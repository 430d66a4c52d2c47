//go:build js

// Command offline plays the arena in the browser with no server: a
// lockstep room and every client run in the page (examples/arena/local),
// the person in slot 0 and bots in the others. Build it with
//
//	GOOS=js GOARCH=wasm go build -o arena.wasm ./examples/arena/offline
//
// and load it with the Go distribution's wasm_exec.js (see the README).
// The page URL may choose ?players=N (2 to 10) and &seed=S.
package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"syscall/js"
	"time"

	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/examples/arena/local"
	"github.com/tongbu/tongbu/examples/arena/view"
)

func main() {
	players, seed := 6, uint64(time.Now().UnixNano())
	if q, err := url.ParseQuery(strings.TrimPrefix(js.Global().Get("location").Get("search").String(), "?")); err == nil && len(q) > 0 {
		if n, err := strconv.Atoi(q.Get("players")); err == nil {
			players = min(max(n, game.MinPlayers), game.MaxPlayers)
		}
		if s, err := strconv.ParseUint(q.Get("seed"), 10, 64); err == nil {
			seed = s
		}
	}
	m, err := local.New(players, 0, seed)
	if err != nil {
		fail(err)
		return
	}
	v, err := view.New(m, seed)
	if err != nil {
		fail(err)
		return
	}
	if err := view.Run(v, "tongbu arena (offline)"); err != nil {
		fail(err)
	}
}

// fail shows err on the page and in the console.
func fail(err error) {
	msg := fmt.Sprintf("arena: %v", err)
	js.Global().Get("console").Call("error", msg)
	if body := js.Global().Get("document").Get("body"); body.Truthy() {
		body.Set("textContent", msg)
	}
}
