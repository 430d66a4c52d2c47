//go:build !js

package serve_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interop/natstest"
)

// TestServeSamples starts `tongbu serve` with each sample of
// examples/serve (its addresses overridden for loopback, the cluster's
// NATS URL pointed at a test server): it serves, and creates what the
// file names.
func TestServeSamples(t *testing.T) {
	ns := natstest.Server(t)
	dir := filepath.Join("..", "..", "examples", "serve")
	for _, tt := range []struct {
		file  string
		args  []string
		wants []string // lines /metrics must hold
	}{
		{"relay.json", nil, []string{"tongbu_rooms 4", "tongbu_worlds 0"}},
		{"world.json", nil, []string{"tongbu_rooms 0", "tongbu_worlds 2"}},
		{"cluster.json", []string{"-nats", ns.ClientURL()}, []string{"tongbu_rooms 0"}},
		{"cells-west.json", []string{"-nats", ns.ClientURL()}, []string{"tongbu_worlds 1"}}, // its cell, the other node's absent
	} {
		t.Run(tt.file, func(t *testing.T) {
			p := startServeWith(t, "0123456789abcdef0123", tt.file, append([]string{"-config", filepath.Join(dir, tt.file)}, tt.args...)...)
			// A node serves its config's cells once it has heard the
			// others (two heartbeats): asked until then.
			var body []byte
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				resp, err := http.Get(p.url + "/metrics")
				if err != nil {
					t.Fatal(err)
				}
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				missing := ""
				for _, w := range tt.wants {
					if !strings.Contains(string(body), w+"\n") {
						missing = w
					}
				}
				if missing == "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("/metrics lacks %q after 10 s:\n%s", missing, body)
				}
			}
		})
	}
}
