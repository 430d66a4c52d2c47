//go:build !js

package matchmaker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/matchmaker"
)

// ExampleQueue is a lobby's side: it puts a party of two in line for 5v5
// and hands each player the server and room ticket of its match (the
// client then calls engine.Dial(ctx, a.URL, a.Tickets[id], ...)). The
// Services run in tongbu serve or tongbu matchmaker processes on the same
// NATS (interop/matchmaker tests the same against real ones).
func ExampleQueue() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	q, err := matchmaker.NewQueue(nc, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Close()
	w, err := q.Submit(matchmaker.Ticket{
		Mode:  "5v5",
		Build: "1.4.2",
		Players: []matchmaker.Player{
			{ID: "ann", Rating: matchmaker.Rating{Mu: 27.1, Sigma: 2.2}},
			{ID: "bo", Rating: matchmaker.NewRating()}, // a new player
		},
		RTT: map[string]int{"eu-west": 24, "us-east": 95}, // measured by the client
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := w.Await(ctx) // ErrTimeout, ErrUnavailable, or ctx's end (which cancels it)
	if err != nil {
		fmt.Println("no match:", err)
		return
	}
	for id, ticket := range a.Tickets {
		fmt.Println(id, "plays on team", a.Team, "at", a.URL, "in", a.Region, "with ticket", ticket)
	}
}
