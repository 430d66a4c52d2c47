//go:build !js

package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

// FuzzClusterInput: what another process of the cluster sends a node
// over NATS for the node's own code to read (a room request's config, a
// world request's config, an arriving player's portal state) is read or
// refused with an error, and what is read makes a room, a world or a
// player within their bounds; nothing panics.
func FuzzClusterInput(f *testing.F) {
	f.Add([]byte(`{"players":2,"hz":30,"fill":"repeat","late":"next","start":"all"}`))
	f.Add([]byte(`{"region_size":512,"width":16,"height":16,"hz":10,"cap":5,"portals":[{"x":0,"y":0,"w":100,"h":100,"to":"cave","at":[5,5]}]}`))
	f.Add([]byte(`{"x":100,"y":-7,"life":200,"mana":3}`))
	f.Add([]byte(`{"players":-1,"hz":100000}`))
	f.Add([]byte(`{"width":1000000000,"height":1000000000}`))
	f.Add([]byte(`{"x":1e99}`))
	f.Add([]byte(`null`))
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true, MaxRooms: 4})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Shutdown(f.Context())
	host := roomHost(srv)
	ws := &worlds{srv: srv, log: slog.New(slog.NewTextHandler(io.Discard, nil)), maps: map[string]*worldConfig{}}
	w, err := interest.NewWorld(interest.Config{Width: 8, Height: 8}, time.Unix(0, 0), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if rc, err := decodeRoomConfig(b); err == nil {
			if _, err := rc.lockstep(); err == nil {
				if _, err := host(cluster.RoomRequest{Room: "fuzz", Players: []string{"a", "b"}, Config: json.RawMessage(b)}); err == nil {
					if r, ok := srv.Room("fuzz"); ok {
						r.Close()
					}
				}
			}
		}
		if _, err := decodeWorldConfig(b); err == nil {
			if cfg, err := ws.make(cluster.WorldRequest{World: "fuzz-w", Cap: 5, Config: json.RawMessage(b)}); err == nil {
				if ew, err := srv.CreateWorld("fuzz-w", cfg); err == nil {
					ew.Close()
				}
			}
		}
		st, err := readPortalState(b)
		if err != nil && st != nil {
			t.Fatal("a refused state read as one")
		}
		id, err := spawn(w, "p", st)
		if err != nil {
			return
		}
		lg, _ := w.Logic(id)
		c := w.Config()
		if lg.Pos.X < 0 || lg.Pos.Y < 0 || int(lg.Pos.X) >= c.Width*c.RegionSize || int(lg.Pos.Y) >= c.Height*c.RegionSize {
			t.Fatalf("a player placed off the map at %v by %q", lg.Pos, b)
		}
		w.Despawn(id)
	})
}
