//go:build !js

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tongbu/tongbu/engine"
)

// (interop/serve's TestCellsAcrossProcesses serves a map's cells from two
// processes on a real NATS server.)

// TestCellsConfigChecks refuses the cells entries that cannot work.
func TestCellsConfigChecks(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [0]}]}`, "need a cluster"},
		{`{"cells": [{"map": "wild", "cols": 0, "rows": 1}]}`, "cells on a map"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [2]}]}`, "each a cell from 0 to 1"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [1, 1]}]}`, "once"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "start": "noon"}]}`, "start"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "width": -3}]}`, "wild"},
	} {
		var cfg serveConfig
		if err := json.Unmarshal([]byte(tc.json), &cfg); err != nil {
			t.Fatal(err)
		}
		inCluster := !strings.Contains(tc.want, "cluster")
		if inCluster {
			cfg.Cluster.NATS = "nats://127.0.0.1:1"
		}
		srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true})
		if err != nil {
			t.Fatal(err)
		}
		err = createFromConfig(srv, &worlds{srv: srv, maps: map[string]*worldConfig{}}, &cfg, 0)
		srv.Shutdown(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.json, err, tc.want)
		}
	}
}
