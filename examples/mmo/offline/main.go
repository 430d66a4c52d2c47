//go:build js

// Command offline is the MMO demo with no server: the demo world runs in
// the page beside the player's client (view.Local), so the view can be
// tried from a static file server. Build it with
//
//	GOOS=js GOARCH=wasm go build -o mmo.wasm ./examples/mmo/offline
//
// and serve it with index.html and wasm_exec.js (see the README).
package main

import (
	"log"
	"time"

	"github.com/tongbu/tongbu/examples/mmo/view"
	"github.com/tongbu/tongbu/examples/mmo/world"
)

func main() {
	now := time.Now()
	l, err := view.NewLocal(world.Config{Start: now, Seed: uint64(now.UnixNano())}, "you")
	if err != nil {
		log.Fatal(err)
	}
	if err := view.Run(view.New(l), "tongbu MMO (offline)"); err != nil {
		log.Fatal(err)
	}
}
