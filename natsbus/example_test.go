//go:build !js

package natsbus_test

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/tongbu/tongbu/natsbus"
)

// Example shows a world server and a game server, each with its own
// connection to one NATS server.
func Example() {
	// The NATS server you run; interop/natsbus runs this example against
	// a real one.
	url := nats.DefaultURL
	world, err := natsbus.Dial(url)
	if err != nil {
		panic(err)
	}
	defer world.Close()
	game, err := natsbus.Dial(url)
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
	fmt.Println(<-got) // delta 42
}

// ExampleAuth connects a process to its cluster's NATS server as the user
// of its role, over TLS, as examples/serve/nats.conf admits it.
func ExampleAuth() {
	opts, err := natsbus.Auth{User: "lobby", Password: "from-a-secret-store"}.Options()
	if err != nil {
		panic(err)
	}
	// Then: bus, err := natsbus.Dial("tls://nats.internal:4222", opts...)
	fmt.Println(len(opts), "options")
	// Output: 1 options
}
