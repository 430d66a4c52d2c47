//go:build js

// Command web is the duel's browser client for `tongbu demo`: it gets a
// ticket from the demo server, joins a duel room with a bot over WebRTC,
// and plays it in the prediction mode in the Ebiten view.
package main

import (
	"github.com/tongbu/tongbu/examples/duel/view"
	"github.com/tongbu/tongbu/examples/internal/demoweb"
)

func main() {
	c, err := demoweb.Join("duel")
	if err != nil {
		demoweb.Fail(err)
	}
	v, err := view.New(c)
	if err != nil {
		demoweb.Fail(err)
	}
	if err := view.Run(v); err != nil {
		demoweb.Fail(err)
	}
}
