//go:build !js

package matchmaker

import (
	"fmt"
	"testing"
)

// TestSplit: a Service's message to a queue longer than a queue reads
// goes in parts within the bounds, each claim whole, nothing lost.
func TestSplit(t *testing.T) {
	qm := &queueMsg{Op: "claim", Service: "mm", Instance: 1}
	for i := range 2500 {
		qm.Claims = append(qm.Claims, claim{Match: fmt.Sprint("m", i), Tickets: make([]string, 10)})
	}
	for i := range 15000 {
		qm.Assign = append(qm.Assign, Assignment{Ticket: fmt.Sprint("t", i)})
	}
	parts := split(qm)
	claims, assigns := 0, 0
	for _, p := range parts {
		if err := p.validate(); err != nil {
			t.Fatal(err)
		}
		tickets := 0
		for _, c := range p.Claims {
			tickets += len(c.Tickets)
		}
		if tickets > maxBatch || len(p.Assign) > maxBatch || p.Op != "claim" || p.Service != "mm" {
			t.Fatalf("a part of %d tickets and %d assignments", tickets, len(p.Assign))
		}
		for _, c := range p.Claims {
			if c.Match != fmt.Sprint("m", claims) {
				t.Fatalf("claim %s in place %d", c.Match, claims)
			}
			claims++
		}
		for _, a := range p.Assign {
			if a.Ticket != fmt.Sprint("t", assigns) {
				t.Fatalf("assignment %s in place %d", a.Ticket, assigns)
			}
			assigns++
		}
	}
	if claims != 2500 || assigns != 15000 || len(parts) != 5 {
		t.Errorf("%d parts, %d claims, %d assignments", len(parts), claims, assigns)
	}
	if small := split(&queueMsg{Op: "expire", IDs: []string{"a"}}); len(small) != 1 {
		t.Errorf("a small message in %d parts", len(small))
	}
}
