//go:build !js

package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/internal/seal"
)

// The cluster's trust boundary (DESIGN.md, "Who may speak on NATS").
// Anyone who reaches the NATS server may publish on any subject it
// allows them, so no message is taken for being there: each is sealed
// with keys derived from Options.Secret for its sender (internal/seal:
// authenticated, encrypted, fresh, bound to its subject), and a message
// that does not open, or that its sender may not send (a heartbeat for
// another node), is dropped, counted and logged at a bounded rate.

// keys returns the keys of o's secrets.
func (o *Options) keys() (*seal.Keys, error) {
	if len(o.Secret) == 0 {
		return nil, fmt.Errorf("%w: Options.Secret: the cluster's secret is required (at least %d bytes, the same in every process of the cluster)", ErrInvalid, seal.MinSecret)
	}
	k, err := seal.NewKeys(o.Secret, o.AcceptSecrets...)
	if err != nil {
		return nil, fmt.Errorf("%w: Options.Secret: %v", ErrInvalid, err)
	}
	return k, nil
}

// conn returns a sealed connection on nc that speaks as role id.
func (o *Options) conn(nc *nats.Conn, role seal.Role, id string) (*seal.Conn, error) {
	k, err := o.keys()
	if err != nil {
		return nil, err
	}
	return seal.NewConn(nc, k, role, id, seal.Config{MaxSkew: o.MaxSkew, Logger: o.Logger, Name: "cluster"})
}

// randomID returns prefix and 12 random hex digits: the sender id of a
// process that has no name of its own (a directory, a lobby).
func randomID(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// clients are the sealed connections of the functions that place rooms
// and players for a process that is not a node (a lobby's CreateRoom,
// CreateWorld, JoinWorld, Kick): one a NATS connection and secret, so
// that its requests share one reply subscription and one sender.
var clients struct {
	mu sync.Mutex
	m  map[clientKey]*seal.Conn
}

type clientKey struct {
	nc      *nats.Conn
	secrets string
}

// clientConn returns the sealed connection of the placer on nc with o's
// secrets; those of connections closed since are dropped on the way.
func clientConn(nc *nats.Conn, o *Options) (*seal.Conn, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: no NATS connection", ErrInvalid)
	}
	var sb strings.Builder
	sb.Write(o.Secret)
	for _, s := range o.AcceptSecrets {
		sb.WriteByte(0)
		sb.Write(s)
	}
	key := clientKey{nc, sb.String()}
	clients.mu.Lock()
	defer clients.mu.Unlock()
	for k, c := range clients.m {
		if k.nc.IsClosed() {
			c.Close()
			delete(clients.m, k)
		}
	}
	if c := clients.m[key]; c != nil {
		return c, nil
	}
	c, err := o.conn(nc, seal.RoleClient, randomID("c"))
	if err != nil {
		return nil, err
	}
	if clients.m == nil {
		clients.m = map[clientKey]*seal.Conn{}
	}
	clients.m[key] = c
	return c, nil
}

// publishJSON seals v as JSON and publishes it on subject.
func publishJSON(c *seal.Conn, o *Options, subject string, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		err = c.Publish(subject, b)
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		o.Logger.Warn("cluster: publish", "subject", subject, "err", err)
	}
}

// respondJSON seals v as JSON as the reply to m.
func respondJSON(m *seal.Msg, o *Options, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		err = m.Respond(b)
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		o.Logger.Debug("cluster: respond", "subject", m.Subject, "err", err)
	}
}

// fromNode is a Request's accept for a reply from node id.
func fromNode(id string) func(*seal.Msg) bool {
	return func(m *seal.Msg) bool { return m.From.Role == seal.RoleNode && m.From.ID == id }
}

// anyNode is a Request's accept for a reply from any node.
func anyNode(m *seal.Msg) bool { return m.From.Role == seal.RoleNode }

// placer reports whether m's sender may ask the cluster for rooms and
// worlds and book places: a node, a lobby, a matchmaking Service.
func placer(m *seal.Msg) bool {
	switch m.From.Role {
	case seal.RoleNode, seal.RoleClient, seal.RoleService:
		return true
	}
	return false
}

// Dropped counts the cluster messages this node dropped, by reason:
// "forged" (not sealed with the cluster's secret, or altered), "stale"
// (sent further than Options.MaxSkew from this clock), "replayed" (taken
// already), "refused" (sealed, but its sender may not send it: a
// heartbeat naming another node).
func (n *Node) Dropped() map[string]uint64 { return n.c.Stats().Dropped() }

// Dropped counts the cluster messages the directory dropped (Node.Dropped
// says how they are counted); a node's directory counts with its node.
func (d *Directory) Dropped() map[string]uint64 { return d.c.Stats().Dropped() }

// WriteMetrics writes the node's counters in the Prometheus text format,
// for a server's /metrics (engine.Server.AddMetrics): its NATS messages
// (tongbu_cluster_messages_total, opened, and
// tongbu_cluster_messages_dropped_total by reason), and its standbys,
// heirs and checkpoints (Standbys) as tongbu_cluster_standby_rooms,
// tongbu_cluster_heir_worlds, tongbu_cluster_checkpoints_total and the
// like.
func (n *Node) WriteMetrics(w io.Writer) {
	WriteSealMetrics(w, "tongbu_cluster", "Cluster", n.c.Stats().Opened.Load(), n.Dropped())
	st := n.Standbys()
	for _, m := range []struct {
		name, kind, help string
		v                any
	}{
		{"standby_rooms", "gauge", "This node's rooms with a standby on another node.", st.Rooms},
		{"standing_by", "gauge", "Rooms of other nodes this node stands by for.", st.StandsBy},
		{"rooms_taken_over_total", "counter", "Rooms this node took over from a silent node.", st.TakenOver},
		{"rooms_handed_off_total", "counter", "Rooms this node handed to their standbys in a drain.", st.HandedOff},
		{"heir_worlds", "gauge", "This node's worlds with an heir on another node.", st.Worlds},
		{"heir_of", "gauge", "Worlds of other nodes this node is the heir of.", st.Heirs},
		{"worlds_taken_over_total", "counter", "Worlds this node brought back from a silent node's checkpoints.", st.WorldsTakenOver},
		{"worlds_moved_away_total", "counter", "Worlds this node moved to their heirs in a drain.", st.WorldsMovedAway},
		{"worlds_moved_in_total", "counter", "Worlds moved here by another node's drain.", st.WorldsMovedIn},
		{"checkpoints_total", "counter", "World checkpoints this node wrote to the bucket.", st.Checkpoints},
		{"checkpoint_bytes_total", "counter", "Bytes of those checkpoints, sealed.", st.CheckpointBytes},
	} {
		fmt.Fprintf(w, "# HELP tongbu_cluster_%s %s\n# TYPE tongbu_cluster_%s %s\ntongbu_cluster_%s %v\n", m.name, m.help, m.name, m.kind, m.name, m.v)
	}
}

// WriteSealMetrics writes counters of sealed NATS messages under the
// metric name prefix (tongbu_cluster, tongbu_matchmaker): those opened,
// and those dropped by reason. what names the messages in the help text.
func WriteSealMetrics(w io.Writer, prefix, what string, opened uint64, dropped map[string]uint64) {
	fmt.Fprintf(w, "# HELP %s_messages_total %s messages from NATS that opened (sealed with the cluster's secret, fresh, not replayed).\n# TYPE %s_messages_total counter\n%s_messages_total %d\n",
		prefix, what, prefix, prefix, opened)
	fmt.Fprintf(w, "# HELP %s_messages_dropped_total %s messages from NATS dropped: forged, stale, replayed, or refused (from a sender that may not send them).\n# TYPE %s_messages_dropped_total counter\n",
		prefix, what, prefix)
	reasons := make([]string, 0, len(dropped))
	for r := range dropped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "%s_messages_dropped_total{reason=%q} %d\n", prefix, r, dropped[r])
	}
}
