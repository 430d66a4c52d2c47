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
	secret := make([]byte, 32) // shared with your game server, which signs the tickets
	rand.Read(secret)
	udpAddr, httpAddr := "127.0.0.1:0", "127.0.0.1:0" // ":3478" and ":8080" on a real host
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// README:server
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: udpAddr})
	if err != nil {
		return err
	}
	if _, err := srv.CreateRoom("match-1", lockstep.Config{Players: 2, Hz: 15}); err != nil { // a lockstep relay room
		return err
	}
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return err
	}
	go engine.HTTPServer("", srv.Handler()).Serve(ln) // signaling, /healthz, /metrics
	go srv.Serve(ctx)                                 // until ctx is done; then a graceful shutdown

	// Your game server hands each player a one-use ticket for its room:
	ticket, err := srv.Ticket("ann", "match-1", engine.RolePlayer, time.Minute)
	// README:end
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintln(out, "server at", url)

	// Two bots, each with a ticket from the "game server".
	results := make(chan string, 2)
	go func(ticket string) { results <- bot(ctx, url, "ann", ticket, d) }(ticket)
	bobs, err := srv.Ticket("bob", "match-1", engine.RolePlayer, time.Minute)
	if err != nil {
		return err
	}
	go func() { results <- bot(ctx, url, "bob", bobs, d) }()
	a, b := <-results, <-results
	fmt.Fprintln(out, a)
	fmt.Fprintln(out, b)
	return nil
}

// bot plays for d and returns a summary: frames played and a hash of
// everything in them, which is the same for both bots.
func bot(ctx context.Context, url, name, ticket string, d time.Duration) string {
	h := fnv.New64a()
	frames := 0
	myInput := []byte(name)
	play := func(f lockstep.Frame) { // the game's step: here, a hash of the first 60 frames
		frames = f.Number + 1
		if frames <= 60 {
			for _, s := range f.Slots {
				for _, in := range s.Inputs {
					h.Write(in)
				}
			}
		}
	}
	end := time.Now().Add(d)
	// README:client
	c, err := engine.Dial(ctx, url, ticket, nil)
	if err != nil {
		return name + ": " + err.Error()
	}
	defer c.Close()
	period := time.Second / time.Duration(c.LockstepConfig().Hz)
	var sent time.Time
	for now := time.Now(); now.Before(end); now = <-time.After(time.Second / 60) { // each render tick
		if now.Sub(sent) >= period { // one input a frame (the room takes InputsPerFrame at most)
			c.Lockstep().Input(now, myInput)
			sent = now
		}
		if err := c.Update(now); err != nil { // receive, and send when due
			return name + ": " + err.Error()
		}
		for _, f := range c.Lockstep().Advance(now).Frames { // the frames to simulate now
			play(f)
		}
	}
	// README:end
	return fmt.Sprintf("%s (slot %d): %d frames, first 60 hash %016x", name, c.Slot(), frames, h.Sum64())
}
