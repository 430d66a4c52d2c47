//go:build !js

// Command quickstart is the smallest tongbu program: a lockstep relay
// server and two bot clients in plain Go, over real WebRTC on this
// machine. The bots send an input every frame and check that they play
// the same frames.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"hash/fnv"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

func main() {
	if err := run(5*time.Second, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(d time.Duration, out *os.File) error {
	// The server: a secret shared with the game server, one room.
	secret := make([]byte, 32)
	rand.Read(secret)
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		return err
	}
	if _, err := srv.CreateRoom("quickstart", lockstep.Config{Players: 2, Hz: 15}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(ln, srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx)
	url := "http://" + ln.Addr().String()
	fmt.Fprintln(out, "server at", url)

	// Two bots, each with a ticket from the "game server".
	results := make(chan string, 2)
	for _, name := range []string{"ann", "bob"} {
		ticket, err := srv.Ticket(name, "quickstart", engine.RolePlayer, time.Minute)
		if err != nil {
			return err
		}
		go func() { results <- bot(ctx, url, name, ticket, d) }()
	}
	a, b := <-results, <-results
	fmt.Fprintln(out, a)
	fmt.Fprintln(out, b)
	return nil
}

// bot plays for d and returns a summary: frames played and a hash of
// everything in them, which is the same for both bots.
func bot(ctx context.Context, url, name, ticket string, d time.Duration) string {
	c, err := engine.Dial(ctx, url, ticket, &engine.ClientConfig{IncludeLoopback: true})
	if err != nil {
		return name + ": " + err.Error()
	}
	defer c.Close()
	h := fnv.New64a()
	frames := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second / 60) {
		now := time.Now()
		c.Lockstep().Input(now, []byte(name))
		if err := c.Update(now); err != nil {
			return name + ": " + err.Error()
		}
		for _, f := range c.Lockstep().Advance(now).Frames {
			frames = f.Number + 1
			if frames <= 60 { // hash the first 60 frames, which both have played
				for _, s := range f.Slots {
					for _, in := range s.Inputs {
						h.Write(in)
					}
				}
			}
		}
	}
	return fmt.Sprintf("%s (slot %d): %d frames, first 60 hash %016x", name, c.Slot(), frames, h.Sum64())
}
