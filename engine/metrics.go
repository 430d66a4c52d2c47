//go:build !js

package engine

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

// metrics are the server's operator counters, written in the Prometheus
// text exposition format (version 0.0.4) by hand: the format is a few
// lines of text, and the client library would be the module's largest
// dependency for no gain.
type metrics struct {
	mu    sync.Mutex
	joins uint64
	// Transfers out of this server's worlds that ended: moved, or stayed.
	movedOut, stayed uint64
	resumes          uint64
	kicks            uint64 // connections ended by Server.Kick
	refusals         map[string]uint64
	drops            map[[2]string]uint64 // {mode, reason}
	frames           uint64
	cutLate          histogram       // how late rooms cut, seconds
	tick             histogram       // how long worlds' ticks took, seconds
	checkpoint       histogram       // how long worlds' checkpoints took on their workers, seconds
	closed           transport.Stats // summed over closed connections
	interest         map[string]uint64
	events           map[string]uint64
	// Lockstep matches that ended (rooms closed after cutting frames),
	// and those in which players' states disagreed.
	matches, desyncedMatches uint64
}

// cutLateBuckets are the upper bounds of the cut-lateness histogram, in
// seconds.
var cutLateBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1}

// worldTickBuckets are the upper bounds of the world-tick histogram, in
// seconds: up to a 16 Hz world's whole frame and past it.
var worldTickBuckets = []float64{0.0005, 0.001, 0.002, 0.003, 0.004, 0.006, 0.008, 0.012, 0.016, 0.024, 0.033, 0.05, 0.0625, 0.1, 0.25}

// histogram counts observations in buckets (the last is +Inf) and sums
// them; the metrics' mutex guards it.
type histogram struct {
	bounds []float64
	counts []uint64
	sum    float64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(s float64) {
	h.counts[sort.SearchFloat64s(h.bounds, s)]++
	h.sum += s
}

// write writes h as the Prometheus histogram name.
func (h *histogram) write(b *strings.Builder, name string) {
	var cum uint64
	for i, le := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(b, "%s_bucket{le=\"%g\"} %d\n", name, le, cum)
	}
	cum += h.counts[len(h.bounds)]
	fmt.Fprintf(b, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(b, "%s_sum %g\n%s_count %d\n", name, h.sum, name, cum)
}

func newMetrics() *metrics {
	return &metrics{refusals: map[string]uint64{}, drops: map[[2]string]uint64{}, interest: map[string]uint64{}, events: map[string]uint64{},
		cutLate: newHistogram(cutLateBuckets), tick: newHistogram(worldTickBuckets),
		checkpoint: newHistogram(worldTickBuckets)}
}

func (m *metrics) refused(reason string) {
	m.mu.Lock()
	m.refusals[reason]++
	m.mu.Unlock()
}

func (m *metrics) joined() {
	m.mu.Lock()
	m.joins++
	m.mu.Unlock()
}

// resumed counts a player back to its held world entity from a lost
// connection.
func (m *metrics) resumed() {
	m.mu.Lock()
	m.resumes++
	m.mu.Unlock()
}

// kicked counts the connections a kick ended.
func (m *metrics) kicked(n int) {
	m.mu.Lock()
	m.kicks += uint64(n)
	m.mu.Unlock()
}

// transferEnded counts a transfer out of a world.
func (m *metrics) transferEnded(moved bool) {
	m.mu.Lock()
	if moved {
		m.movedOut++
	} else {
		m.stayed++
	}
	m.mu.Unlock()
}

func (m *metrics) drop(mode, reason string) {
	m.mu.Lock()
	m.drops[[2]string{mode, reason}]++
	m.mu.Unlock()
}

func (m *metrics) event(kind string) {
	m.mu.Lock()
	m.events[kind]++
	m.mu.Unlock()
}

// matchEnded counts a lockstep match at its room's close.
func (m *metrics) matchEnded(desynced bool) {
	m.mu.Lock()
	m.matches++
	if desynced {
		m.desyncedMatches++
	}
	m.mu.Unlock()
}

func (m *metrics) cutLateBy(d time.Duration) {
	m.mu.Lock()
	m.cutLate.observe(max(d.Seconds(), 0))
	m.mu.Unlock()
}

// worldTick records how long a world's tick took: the game's Tick hook
// and the world's frame.
func (m *metrics) worldTick(d time.Duration) {
	m.mu.Lock()
	m.tick.observe(max(d.Seconds(), 0))
	m.mu.Unlock()
}

// worldCheckpoint records how long a world's checkpoint took on its
// worker: the snapshot, the game's Checkpoint hook and the encoding.
func (m *metrics) worldCheckpoint(d time.Duration) {
	m.mu.Lock()
	m.checkpoint.observe(max(d.Seconds(), 0))
	m.mu.Unlock()
}

func (m *metrics) closedConn(st transport.Stats) {
	m.mu.Lock()
	m.closed.SentBytes += st.SentBytes
	m.closed.SentMessages += st.SentMessages
	m.closed.RecvBytes += st.RecvBytes
	m.closed.RecvMessages += st.RecvMessages
	m.closed.DroppedUnreliable += st.DroppedUnreliable
	m.mu.Unlock()
}

// roomDelta adds what a room did since its previous snapshot.
func (m *metrics) roomDelta(prev, cur *lockstep.RoomStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.frames += uint64(cur.Frames - prev.Frames)
	for i := range cur.Dropped {
		if d := cur.Dropped[i] - prev.Dropped[i]; d > 0 {
			m.drops[[2]string{"lockstep", lockstep.DropName(i)}] += d
		}
	}
}

// worldDelta adds what a world did since its previous snapshot.
func (m *metrics) worldDelta(prev, cur *interest.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range cur.Dropped {
		if d := cur.Dropped[i] - prev.Dropped[i]; d > 0 {
			m.drops[[2]string{"interest", interest.DropName(i)}] += uint64(d)
		}
	}
	for _, f := range []struct {
		name      string
		cur, prev int64
	}{
		{"commands", cur.Commands, prev.Commands}, {"forced_syncs", cur.ForcedSyncs, prev.ForcedSyncs},
		{"discoveries", cur.Discoveries, prev.Discoveries}, {"state_syncs", cur.StateSyncs, prev.StateSyncs},
		{"repairs", cur.Repairs, prev.Repairs}, {"corrections", cur.Corrections, prev.Corrections},
		{"deferred", cur.Deferred, prev.Deferred},
	} {
		if d := f.cur - f.prev; d > 0 {
			m.interest[f.name] += uint64(d)
		}
	}
}

// serveMetrics writes every metric in the Prometheus text format, to a
// request with the metrics token when one is set.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if t := s.cfg.MetricsToken; t != "" {
		got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if subtle.ConstantTimeCompare([]byte(got), []byte(t)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "metrics token required", http.StatusUnauthorized)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.writeMetrics(w)
}

func (s *Server) writeMetrics(out io.Writer) {
	s.mu.Lock()
	live := make([]transport.Conn, 0, len(s.peers))
	for p := range s.peers {
		live = append(live, p.conn)
	}
	rooms := make([]*Room, 0, len(s.rooms))
	for _, r := range s.rooms {
		rooms = append(rooms, r)
	}
	worlds := make([]*World, 0, len(s.worlds))
	for _, w := range s.worlds {
		worlds = append(worlds, w)
	}
	s.mu.Unlock()
	sort.Slice(worlds, func(i, j int) bool { return worlds[i].name < worlds[j].name })
	sort.Slice(rooms, func(i, j int) bool { return rooms[i].name < rooms[j].name })

	var b strings.Builder
	metric := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	metric("tongbu_connections", "gauge", "Connections joined to a room or world.")
	fmt.Fprintf(&b, "tongbu_connections %d\n", len(live))
	metric("tongbu_rooms", "gauge", "Lockstep rooms.")
	fmt.Fprintf(&b, "tongbu_rooms %d\n", len(rooms))
	metric("tongbu_worlds", "gauge", "Interest worlds.")
	fmt.Fprintf(&b, "tongbu_worlds %d\n", len(worlds))
	metric("tongbu_world_entities", "gauge", "Entities (players and NPCs) of each interest world, as of its last frame.")
	for _, w := range worlds {
		fmt.Fprintf(&b, "tongbu_world_entities{world=%s} %d\n", label(w.name), w.Stats().Entities)
	}

	traffic := s.metrics.trafficWith(live)
	m := s.metrics
	m.mu.Lock()
	metric("tongbu_joins_total", "counter", "Connections that joined a room or world.")
	fmt.Fprintf(&b, "tongbu_joins_total %d\n", m.joins)
	metric("tongbu_transfers_total", "counter", "Transfers of players out of this server's worlds (World.Transfer), by outcome: moved, or stayed where they were.")
	fmt.Fprintf(&b, "tongbu_transfers_total{outcome=\"moved\"} %d\ntongbu_transfers_total{outcome=\"stayed\"} %d\n", m.movedOut, m.stayed)
	metric("tongbu_world_resumes_total", "counter", "Players back to their world entity on a new connection: a lost connection resumed (Config.ResumeWindow), or the same player connecting again.")
	fmt.Fprintf(&b, "tongbu_world_resumes_total %d\n", m.resumes)
	metric("tongbu_kicked_connections_total", "counter", "Connections ended by a kick (Server.Kick).")
	fmt.Fprintf(&b, "tongbu_kicked_connections_total %d\n", m.kicks)
	metric("tongbu_refused_total", "counter", "Connections refused, by reason.")
	for _, k := range sortedKeys(m.refusals) {
		fmt.Fprintf(&b, "tongbu_refused_total{reason=%s} %d\n", label(k), m.refusals[k])
	}
	metric("tongbu_frames_cut_total", "counter", "Lockstep frames cut.")
	fmt.Fprintf(&b, "tongbu_frames_cut_total %d\n", m.frames)
	metric("tongbu_cut_late_seconds", "histogram", "How late rooms ran after their scheduled cut.")
	m.cutLate.write(&b, "tongbu_cut_late_seconds")
	metric("tongbu_world_tick_seconds", "histogram", "How long interest worlds' ticks took: the game's Tick hook and the world's frame.")
	m.tick.write(&b, "tongbu_world_tick_seconds")
	metric("tongbu_world_checkpoint_seconds", "histogram", "How long interest worlds' checkpoints (World.Checkpoint) took on their workers, between two ticks.")
	m.checkpoint.write(&b, "tongbu_world_checkpoint_seconds")
	metric("tongbu_sent_bytes_total", "counter", "Bytes sent to clients, both channels.")
	fmt.Fprintf(&b, "tongbu_sent_bytes_total %d\n", traffic.SentBytes)
	metric("tongbu_received_bytes_total", "counter", "Bytes received from clients.")
	fmt.Fprintf(&b, "tongbu_received_bytes_total %d\n", traffic.RecvBytes)
	metric("tongbu_sent_messages_total", "counter", "Messages sent to clients.")
	fmt.Fprintf(&b, "tongbu_sent_messages_total %d\n", traffic.SentMessages)
	metric("tongbu_received_messages_total", "counter", "Messages received from clients.")
	fmt.Fprintf(&b, "tongbu_received_messages_total %d\n", traffic.RecvMessages)
	metric("tongbu_dropped_total", "counter", "Messages dropped, by mode and reason (unreliable sends to a backed-up channel are mode=\"transport\").")
	fmt.Fprintf(&b, "tongbu_dropped_total{mode=\"transport\",reason=\"backed_up\"} %d\n", traffic.DroppedUnreliable)
	keys := make([][2]string, 0, len(m.drops))
	for k := range m.drops {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	for _, k := range keys {
		fmt.Fprintf(&b, "tongbu_dropped_total{mode=%s,reason=%s} %d\n", label(k[0]), label(k[1]), m.drops[k])
	}
	metric("tongbu_lockstep_events_total", "counter", "Lockstep room events: desyncs, state dumps, players back live.")
	for _, k := range sortedKeys(m.events) {
		fmt.Fprintf(&b, "tongbu_lockstep_events_total{kind=%s} %d\n", label(k), m.events[k])
	}
	metric("tongbu_lockstep_matches_total", "counter", "Lockstep matches ended (rooms closed after cutting frames).")
	fmt.Fprintf(&b, "tongbu_lockstep_matches_total %d\n", m.matches)
	metric("tongbu_lockstep_desynced_matches_total", "counter", "Ended lockstep matches in which players' state hashes disagreed at least once.")
	fmt.Fprintf(&b, "tongbu_lockstep_desynced_matches_total %d\n", m.desyncedMatches)
	metric("tongbu_lockstep_desync_rate", "gauge", "Share of ended lockstep matches with a desync, since the server started (a shipped game's reference: 0.0003).")
	rate := 0.0
	if m.matches > 0 {
		rate = float64(m.desyncedMatches) / float64(m.matches)
	}
	fmt.Fprintf(&b, "tongbu_lockstep_desync_rate %g\n", rate)
	metric("tongbu_interest_sent_total", "counter", "Interest-mode updates sent, by path.")
	for _, k := range sortedKeys(m.interest) {
		fmt.Fprintf(&b, "tongbu_interest_sent_total{path=%s} %d\n", label(k), m.interest[k])
	}
	m.mu.Unlock()

	// The lockstep quality report, per player and spectator (peer).
	type gauge struct {
		name, typ, help string
		v               func(q *lockstep.PeerQuality) float64
	}
	gauges := []gauge{
		{"tongbu_lockstep_rtt_seconds", "gauge", "Mean round-trip time.", func(q *lockstep.PeerQuality) float64 { return q.RTTMean.Seconds() }},
		{"tongbu_lockstep_rtt_max_seconds", "gauge", "Highest round-trip time.", func(q *lockstep.PeerQuality) float64 { return q.RTTMax.Seconds() }},
		{"tongbu_lockstep_loss_up_ratio", "gauge", "Share of uplink packets lost.", func(q *lockstep.PeerQuality) float64 { return q.LossUp }},
		{"tongbu_lockstep_loss_down_ratio", "gauge", "Share of downlink packets lost.", func(q *lockstep.PeerQuality) float64 { return q.LossDown }},
		{"tongbu_lockstep_jitter_ms", "gauge", "Mean delay variation (jitter) the client reported, in ms.", func(q *lockstep.PeerQuality) float64 { return q.JitterMean }},
		{"tongbu_lockstep_stalls_total", "counter", "Times play paused for a missing frame.", func(q *lockstep.PeerQuality) float64 { return float64(q.Stalls) }},
		{"tongbu_lockstep_late_drops_total", "counter", "Inputs dropped for arriving after their frame was cut.", func(q *lockstep.PeerQuality) float64 { return float64(q.LateDrops) }},
		{"tongbu_lockstep_redundancy", "gauge", "Frames repeated per downlink packet.", func(q *lockstep.PeerQuality) float64 { return float64(q.Redundancy) }},
		{"tongbu_lockstep_reconnects_total", "counter", "Joins after the match started.", func(q *lockstep.PeerQuality) float64 { return float64(q.Reconnects) }},
	}
	if s.rtc != nil {
		writeDataPathMetrics(&b, s.rtc.DataPath())
	}
	writeRuntimeMetrics(&b)
	s.extraMu.Lock()
	for _, f := range s.extra {
		f(&b)
	}
	s.extraMu.Unlock()
	if !s.cfg.PeerMetrics {
		io.WriteString(out, b.String())
		return
	}
	reports := make([]lockstep.Quality, len(rooms))
	for i, r := range rooms {
		reports[i] = r.Quality()
	}
	metric("tongbu_lockstep_desyncs", "gauge", "Compared frames on which players' state hashes disagreed, per running match.")
	for i, r := range rooms {
		fmt.Fprintf(&b, "tongbu_lockstep_desyncs{room=%s} %d\n", label(r.name), reports[i].Desyncs)
	}
	for _, g := range gauges {
		metric(g.name, g.typ, g.help+" Per lockstep peer.")
		for i, r := range rooms {
			for k := range reports[i].Peers {
				q := &reports[i].Peers[k]
				fmt.Fprintf(&b, "%s{room=%s,peer=\"%d\"} %g\n", g.name, label(r.name), q.Peer, g.v(q))
			}
		}
	}
	io.WriteString(out, b.String())
}

// trafficWith returns the traffic of the closed connections plus live.
func (m *metrics) trafficWith(live []transport.Conn) transport.Stats {
	m.mu.Lock()
	t := m.closed
	m.mu.Unlock()
	for _, c := range live {
		st := c.Stats()
		t.SentBytes += st.SentBytes
		t.SentMessages += st.SentMessages
		t.RecvBytes += st.RecvBytes
		t.RecvMessages += st.RecvMessages
		t.DroppedUnreliable += st.DroppedUnreliable
	}
	return t
}

func sortedKeys(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// label quotes a Prometheus label value: backslash, double quote and line
// feed escaped, everything else as is (UTF-8 allowed).
func label(v string) string {
	return `"` + labelEscaper.Replace(v) + `"`
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
