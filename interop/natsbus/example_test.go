//go:build !js

package natsbus_test

import (
	"fmt"

	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/natsbus"
)

// Example shows a world server and a game server, each with its own
// connection to one NATS server.
func Example() {
	srv, err := natstest.Start() // in production: the NATS server you run (nats.DefaultURL)
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	world, err := natsbus.Dial(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer world.Close()
	game, err := natsbus.Dial(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer game.Close()

	got := make(chan string)
	cancel, err := game.Subscribe("replica.guilds", func(msg []byte) { got <- string(msg) })
	if err != nil {
		panic(err)
	}
	defer cancel()
	if err := world.Publish("replica.guilds", []byte("delta 42")); err != nil {
		panic(err)
	}
	fmt.Println(<-got)
	// Output: delta 42
}
