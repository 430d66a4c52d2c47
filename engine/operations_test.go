//go:build !js

package engine

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestMetricsSurface: /metrics behind a token, per-peer gauges only when
// asked for, and the metrics served apart from the public handler.
func TestMetricsSurface(t *testing.T) {
	get := func(h http.Handler, auth string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, MetricsPath, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		b, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(b)
	}
	tests := []struct {
		name      string
		cfg       Config
		auth      string
		code      int
		peerLines bool
	}{
		{"open, no per-peer gauges by default", Config{}, "", 200, false},
		{"per-peer gauges asked for", Config{PeerMetrics: true}, "", 200, true},
		{"token missing", Config{MetricsToken: "s3cret"}, "", 401, false},
		{"token wrong", Config{MetricsToken: "s3cret"}, "Bearer guess", 401, false},
		{"token right", Config{MetricsToken: "s3cret"}, "Bearer s3cret", 200, false},
		{"served apart", Config{SeparateMetrics: true}, "", 404, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.cfg)
			defer h.shutdown()
			go h.s.Serve(t.Context())
			if _, err := h.s.CreateRoom("secret-room-name", lockstep.Config{Players: 2}); err != nil {
				t.Fatal(err)
			}
			c, err := h.join("alice", "secret-room-name", RolePlayer, memnet.LinkConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			code, body := get(h.s.Handler(), tt.auth)
			// The room publishes its quality report from its worker: wait
			// for the first.
			for deadline := time.Now().Add(5 * time.Second); tt.peerLines && !strings.Contains(body, `peer="`) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				code, body = get(h.s.Handler(), tt.auth)
			}
			if code != tt.code {
				t.Fatalf("GET %s: %d, want %d", MetricsPath, code, tt.code)
			}
			if code != 200 {
				if strings.Contains(body, "tongbu_") {
					t.Fatalf("refused, yet metrics in the body:\n%s", body)
				}
				return
			}
			if strings.Contains(body, `peer="`) != tt.peerLines || strings.Contains(body, "secret-room-name") != tt.peerLines {
				t.Fatalf("per-peer gauges and room names shown %v, want %v:\n%s", !tt.peerLines, tt.peerLines, body)
			}
			if !strings.Contains(body, "tongbu_connections 1") {
				t.Fatalf("no connection count:\n%s", body)
			}
		})
	}
	h := newHarness(t, Config{SeparateMetrics: true, MetricsToken: "s3cret"})
	defer h.shutdown()
	if code, body := get(h.s.MetricsHandler(), "Bearer s3cret"); code != 200 || !strings.Contains(body, "tongbu_rooms 0") {
		t.Fatalf("MetricsHandler: %d\n%s", code, body)
	}
}

// TestTicketInQuery: the ticket travels in the Authorization header; the
// query-string form is taken only when the server opts in.
func TestTicketInQuery(t *testing.T) {
	for _, opt := range []bool{false, true} {
		h := newHarness(t, Config{TicketInQuery: opt})
		if _, err := h.s.CreateRoom("r", lockstep.Config{Players: 2}); err != nil {
			t.Fatal(err)
		}
		tk, _ := h.s.Ticket("alice", "r", RolePlayer, time.Minute)
		inQuery := httptest.NewRequest(http.MethodPost, ConnectPath+"?ticket="+tk, nil)
		inQuery.Header.Set(WireHeader, strconv.Itoa(wireVersion))
		_, err := h.s.authorize(inQuery)
		if opt != (err == nil) {
			t.Fatalf("TicketInQuery %v: a ticket in the query: %v", opt, err)
		}
		if !opt && !errors.Is(err, ErrTicketInvalid) {
			t.Fatalf("refused with %v, want ErrTicketInvalid", err)
		}
		req := httptest.NewRequest(http.MethodPost, ConnectPath, nil)
		req.Header.Set("Authorization", "Bearer "+tk)
		req.Header.Set(WireHeader, strconv.Itoa(wireVersion))
		if _, err := h.s.authorize(req); err != nil {
			t.Fatalf("TicketInQuery %v: the header: %v", opt, err)
		}
		h.shutdown()
	}
}

// TestDesyncRate: /metrics counts the lockstep matches that ended and
// those in which players disagreed, and gives the rate.
func TestDesyncRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		defer h.shutdown()
		play := func(room string, liar bool) {
			r, err := h.s.CreateRoom(room, lockstep.Config{Players: 3, HashEvery: 5})
			if err != nil {
				t.Fatal(err)
			}
			var cs []*Client
			for i := range 3 {
				c, err := h.join(fmt.Sprint(room, i), room, RolePlayer, memnet.LinkConfig{Latency: 10 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				cs = append(cs, c)
			}
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(16 * time.Millisecond) {
				now := time.Now()
				for i, c := range cs {
					if err := c.Update(now); err != nil {
						t.Fatal(err)
					}
					for _, f := range c.Lockstep().Advance(now).Frames {
						hash := uint64(f.Number)
						if liar && i == 2 && f.Number > 20 {
							hash++ // its game went another way
						}
						c.Lockstep().ReportHash(f.Number, hash)
					}
				}
			}
			if q := r.Quality(); (q.Desyncs > 0) != liar {
				t.Fatalf("room %s: %d desyncs", room, q.Desyncs)
			}
			for _, c := range cs {
				c.Close()
			}
			r.Close()
		}
		play("honest", false)
		play("liar", true)
		for _, want := range []string{"tongbu_lockstep_matches_total 2", "tongbu_lockstep_desynced_matches_total 1", "tongbu_lockstep_desync_rate 0.5"} {
			if got := h.metricLine(want); got == "" {
				t.Errorf("metrics lack %q", want)
			}
		}
	})
}

// TestRuntimeMetrics: /metrics carries the Go runtime's and the process's
// figures under the Prometheus collectors' names, and the data path's;
// every line is well formed and every family is declared once, before its
// samples.
func TestRuntimeMetrics(t *testing.T) {
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath, nil))
	body := rec.Body.String()
	for _, name := range []string{
		"go_goroutines", "go_threads", "go_info", "go_gc_duration_seconds", "go_memstats_heap_alloc_bytes",
		"go_memstats_alloc_bytes_total", "go_memstats_next_gc_bytes", "process_cpu_seconds_total",
		"process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds",
		"tongbu_transport_datagram_seconds", "tongbu_transport_held_chunks_max", "tongbu_transport_moves_total",
	} {
		if !strings.Contains(body, "\n# TYPE "+name+" ") {
			t.Errorf("no %s", name)
		}
	}
	declared := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name := strings.Fields(f)[0]
			if declared[name] {
				t.Errorf("line %d: %s declared twice", i+1, name)
			}
			declared[name] = true
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("line %d: %q", i+1, line)
		}
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			t.Errorf("line %d: value %q: %v", i+1, value, err)
		}
		base, _, _ := strings.Cut(name, "{")
		family := base
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(base, suffix); ok && declared[f] {
				family = f
			}
		}
		if !declared[family] {
			t.Errorf("line %d: %s before its TYPE", i+1, name)
		}
	}
}
