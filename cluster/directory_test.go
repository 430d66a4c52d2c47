//go:build !js

package cluster

import (
	"encoding/json"
	"testing"

	"github.com/tongbu/tongbu/internal/seal"
)

// TestDirectoryNoFetchAfterClose checks that an event callback still
// running after Close (Unsubscribe does not wait for one) starts no
// room-list fetch, so none is added to the fetches Close waits for.
func TestDirectoryNoFetchAfterClose(t *testing.T) {
	o := (*Options)(nil).withDefaults()
	d := &Directory{opts: o, st: newState(o.Misses, o.MaxNodes, o.MaxLost)}
	d.closed = true // as Close leaves it; nc is nil, so a fetch would fail or panic
	msg := func(subj, node string, v any) *seal.Msg {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return &seal.Msg{Subject: subj, Data: b, From: seal.Peer{Role: seal.RoleNode, ID: node, Instance: 1}}
	}
	d.onEvent(msg(o.subjHeartbeat(), "a", hb("a", 1, 2, 1)))       // unsynced: would fetch
	d.onEvent(msg(o.subjHeartbeat(), "b", hb("b", 1, 0, 0)))       // synced
	d.onEvent(msg(o.subjRoom(), "b", ev("b", 1, 3, "open", "r1"))) // a gap: would fetch
	d.fetches.Wait()
	for _, id := range []string{"a", "b"} {
		n := d.st.nodes[id]
		if n == nil || !n.fetching {
			t.Fatalf("node %s: %+v, want a fetch wanted and never run", id, n)
		}
	}
}
