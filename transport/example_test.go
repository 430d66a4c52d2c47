//go:build !js

package transport_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/tongbu/tongbu/transport"
)

// Example serves WebRTC signaling over HTTP, dials it, and echoes one
// message on each channel.
func Example() {
	srv, err := transport.NewServer(transport.ServerConfig{UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	web := httptest.NewServer(srv) // or http.Handle("/signal", srv)
	defer web.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { // the server side: echo everything
		c, err := srv.Accept(ctx)
		if err != nil {
			return
		}
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				return
			}
			if m.Channel == transport.Reliable {
				c.SendReliable(m.Data)
			} else {
				c.SendUnreliable(m.Data)
			}
		}
	}()

	conn, err := transport.Dial(ctx, web.URL, &transport.ClientConfig{IncludeLoopback: true})
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	conn.SendReliable([]byte("hello over r"))
	m, _ := conn.Receive(ctx)
	fmt.Printf("%s: %s\n", m.Channel, m.Data)
	conn.SendUnreliable([]byte("hello over u"))
	m, _ = conn.Receive(ctx)
	fmt.Printf("%s: %s\n", m.Channel, m.Data)
	// Output:
	// r: hello over r
	// u: hello over u
}
