//go:build !js

package cluster

import "testing"

// TestPriors: a room or world remembers the nodes that stood by for it
// before, so that the word of one that took it over while this node was
// paused is still heard after a new one was named.
func TestPriors(t *testing.T) {
	var p priors
	for _, id := range []string{"", "a", "b", "a", "c", "d", "e"} {
		p.add(id)
	}
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"", false},  // no standby is never one
		{"a", false}, // pushed out by four newer
		{"b", true}, {"c", true}, {"d", true}, {"e", true},
		{"f", false},
	} {
		if got := p.has(c.id); got != c.want {
			t.Errorf("has(%q) = %v, want %v (%q)", c.id, got, c.want, p)
		}
	}
}
