//go:build !js

package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

// TestBuilds: a server that serves some builds lets in the clients that
// run one of them and refuses the others at signaling, with 409 and the
// reason build, naming both sides' builds, before it spends the ticket;
// Dial turns that into ErrBuild, and the metrics count it under "build".
// A server that names no builds serves any client.
func TestBuilds(t *testing.T) {
	for _, tt := range []struct {
		name   string
		builds []string // the server's
		build  string   // the client's
		served bool
		says   []string // what a refusal names
	}{
		{"served build", []string{"1.4", "1.4.1"}, "1.4", true, nil},
		{"the other served build", []string{"1.4", "1.4.1"}, "1.4.1", true, nil},
		{"older build", []string{"1.4", "1.4.1"}, "1.3", false, []string{`"1.3"`, `"1.4", "1.4.1"`}},
		{"no build", []string{"1.4", "1.4.1"}, "", false, []string{"announces no build", `"1.4", "1.4.1"`}},
		{"a prefix is another build", []string{"1.4.1"}, "1.4", false, []string{`"1.4"`, `"1.4.1"`}},
		{"any build", nil, "1.3", true, nil},
		{"any build, none named", nil, "", true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true, Builds: tt.builds})
			if err != nil {
				t.Fatal(err)
			}
			web := httptest.NewServer(s.Handler())
			defer web.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			go s.Serve(ctx)
			defer func() {
				sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer scancel()
				s.Shutdown(sctx)
			}()
			if _, err := s.CreateRoom("duo", lockstep.Config{Players: 2, Hz: 30}); err != nil {
				t.Fatal(err)
			}
			tk, _ := s.Ticket("ann", "duo", RolePlayer, time.Minute)
			c, err := Dial(ctx, web.URL, tk, &ClientConfig{IncludeLoopback: true, Build: tt.build})
			if tt.served {
				if err != nil {
					t.Fatalf("client build %q, server builds %q: %v, want it served", tt.build, tt.builds, err)
				}
				c.Close()
				return
			}
			if !errors.Is(err, ErrBuild) {
				t.Fatalf("client build %q, server builds %q: %v, want ErrBuild", tt.build, tt.builds, err)
			}
			for _, want := range tt.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: want it to name %s", err, want)
				}
			}
			var se *transport.SignalingError
			if !errors.As(err, &se) || se.Status != http.StatusConflict || se.Reason != "build" {
				t.Errorf("%v: want a 409 signaling refusal with the reason build", err)
			}
			var b strings.Builder
			s.writeMetrics(&b)
			if !strings.Contains(b.String(), `tongbu_refused_total{reason="build"} 1`) {
				t.Errorf("the refusal is not counted under build:\n%s", b.String())
			}
			// The refusal spent nothing: the same ticket from a served build
			// plays.
			c, err = Dial(ctx, web.URL, tk, &ClientConfig{IncludeLoopback: true, Build: tt.builds[0]})
			if err != nil {
				t.Fatalf("the refused client's ticket from a served build: %v", err)
			}
			c.Close()
		})
	}
}

// TestBuildsConfig: a build that cannot be named in the header is refused
// by NewServer, and by Dial before it signals, with ErrConfig naming it.
func TestBuildsConfig(t *testing.T) {
	for _, b := range []string{"", strings.Repeat("9", 65), "1.4 beta", "1.4,1.5", "1.4\n", "1.4\t", "1.4é", "\x7f"} {
		_, err := NewServer(Config{Secret: testSecret, NoWebRTC: true, Builds: []string{"1.4", b}})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Config.Builds") || !strings.Contains(err.Error(), fmt.Sprintf("%q", b)) {
			t.Errorf("Builds with %q: %v, want ErrConfig naming it", b, err)
		}
		if b == "" {
			continue // an empty ClientConfig.Build names none
		}
		_, err = Dial(context.Background(), "http://127.0.0.1:1", "ticket", &ClientConfig{Build: b})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "ClientConfig.Build") {
			t.Errorf("ClientConfig.Build %q: %v, want ErrConfig naming it", b, err)
		}
	}
	for _, b := range []string{"1", "1.4.2", "2024-06-01+rc.1", strings.Repeat("9", 64), "v1.4/steam"} {
		s, err := NewServer(Config{Secret: testSecret, NoWebRTC: true, Builds: []string{b}})
		if err != nil {
			t.Errorf("Builds with %q: %v", b, err)
			continue
		}
		s.Shutdown(context.Background())
	}
}
