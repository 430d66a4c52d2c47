//go:build !js

package main

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/tongbu/tongbu/engine"
)

// A deploy's drain: SIGTERM, or POST /drain on the metrics address.

// drainPath is the admin call that drains the node (on -metrics-addr):
// POST, with the metrics token as a bearer token when one is set.
const drainPath = "/drain"

// drainHandler answers POST /drain: the process drains and exits, as on
// SIGTERM.
func drainHandler(token string, drain chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST to drain the node", http.StatusMethodNotAllowed)
			return
		}
		if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		select {
		case drain <- struct{}{}:
		default: // a drain is under way
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintln(w, "draining: the rooms go to their standbys, then the process exits")
	})
}

// drainServer waits, up to d, for the server's matches to end (a
// process outside a cluster, or rooms without a standby), as a deploy's
// graceful termination does.
func drainServer(srv *engine.Server, d time.Duration, log *slog.Logger) {
	if d <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := srv.Drain(ctx); err != nil {
		log.Info("drain: matches still playing at the deadline", "after", d)
	}
}
