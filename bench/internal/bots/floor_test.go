//go:build !js

package bots

import (
	"net"
	"testing"
	"time"
)

// TestFloor: the floor server answers as configured, a datagram down for
// each up (Reply, sealed with AEAD), each echoed, or one a tick to every
// bot heard from (Stream), and counts what it received and sent.
func TestFloor(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  FloorConfig
		size int // of each datagram down
	}{
		{"reply", FloorConfig{TickHz: 50, Reply: 40}, 40},
		{"reply sealed", FloorConfig{TickHz: 50, Reply: 40, AEAD: true}, 40 + 16},
		{"echo", FloorConfig{TickHz: 50}, 7},
		{"stream", FloorConfig{TickHz: 50, Stream: 100}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl, err := StartFloor(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer fl.Stop()
			addr, err := net.ResolveUDPAddr("udp4", fl.URL[len("udp://"):])
			if err != nil {
				t.Fatal(err)
			}
			c, err := net.DialUDP("udp4", nil, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const sent = 5
			for i := range sent {
				if _, err := c.Write([]byte{byte(i), 1, 2, 3, 4, 5, 6}); err != nil {
					t.Fatal(err)
				}
			}
			buf := make([]byte, 1500)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for i := range sent {
				n, err := c.Read(buf)
				if err != nil {
					t.Fatalf("datagram %d down: %v", i, err)
				}
				if n != tc.size {
					t.Errorf("datagram %d down: %d bytes, want %d", i, n, tc.size)
				}
			}
			// It counts a batch sent once the call returns: maybe after
			// the datagrams were read here.
			for end := time.Now().Add(5 * time.Second); fl.Msgs.Load() < 2*sent && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			if got := fl.Msgs.Load(); got < 2*sent {
				t.Errorf("the floor counted %d datagrams, want at least %d", got, 2*sent)
			}
		})
	}
}
