package matchmaker_test

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/matchmaker"
)

// ExampleMatcher matches four duelists in one process: each meets the one
// nearest in skill, on the server nearest to both.
func ExampleMatcher() {
	m, err := matchmaker.NewMatcher(matchmaker.Config{Modes: []matchmaker.Mode{{Name: "duel", Teams: 2, TeamSize: 1}}})
	if err != nil {
		panic(err)
	}
	now := time.Now()
	for _, p := range []struct {
		id       string
		mu       float64
		eu, asia int // round trips, ms
	}{{"ann", 31, 20, 190}, {"bo", 19, 170, 30}, {"cy", 30, 60, 120}, {"di", 20, 150, 40}} {
		m.Add(matchmaker.Ticket{ID: p.id, Mode: "duel",
			Players: []matchmaker.Player{{ID: p.id, Rating: matchmaker.Rating{Mu: p.mu, Sigma: 2}}},
			RTT:     map[string]int{"eu": p.eu, "asia": p.asia}}, now)
	}
	sites := []matchmaker.Site{{Node: "fra-1", Region: "eu", Free: 10}, {Node: "sgp-1", Region: "asia", Free: 10}}
	matches, _ := m.Match(now, sites)
	for _, mt := range matches {
		fmt.Println(mt.Teams[0][0].ID, "v", mt.Teams[1][0].ID, "on", mt.Node, "worst round trip", mt.WorstRTT, "ms")
	}
	// Output:
	// ann v cy on fra-1 worst round trip 60 ms
	// di v bo on sgp-1 worst round trip 40 ms
}
