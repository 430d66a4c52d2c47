//go:build !js

package transport

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// TestICETCP connects a native client of each stack over TCP only to a
// server of each stack that serves ICE-TCP beside UDP, and echoes on both
// channels: the lean stack's own framing and pion's speak the same RFC
// 6544 and 4571.
func TestICETCP(t *testing.T) {
	for _, stack := range []Stack{StackLean, StackPion} {
		t.Run(stack.String(), func(t *testing.T) {
			// Under a loaded machine (the race detector, the packages
			// in parallel) pion's client has once stayed in ICE checking
			// past the default 10 s: a longer handshake, and the server's
			// counters if it still fails.
			lim := Limits{HandshakeTimeout: 30 * time.Second}
			s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Stack: stack, Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.TCPAddr() == nil {
				t.Fatal("no TCP address")
			}
			hs := httptest.NewServer(s)
			defer hs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			for _, client := range []Stack{StackLean, StackPion} {
				c, err := Dial(ctx, hs.URL, &ClientConfig{Network: "tcp", Stack: client, Limits: lim})
				if err != nil {
					t.Fatalf("a %s client: %v (the server's data path: %+v)", client, err, s.DataPath())
				}
				sc, err := s.Accept(ctx)
				if err != nil {
					t.Fatal(err)
				}
				echo100(t, ctx, c, sc)
				c.Close()
			}
			// pion's client may check from a TCP connection per local
			// address, and nominate another than the first checked.
			if stack == StackLean && s.DataPath().TCPPaths < 2 {
				t.Errorf("TCP paths %d, want 2 at least", s.DataPath().TCPPaths)
			}
		})
	}
}

// echo100 sends 100 messages each way, a reliable one up and an
// unreliable one down, and checks that every one arrives in order.
func echo100(t *testing.T, ctx context.Context, c, sc Conn) {
	t.Helper()
	for i := range 100 {
		if err := c.SendReliable([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := sc.SendUnreliable([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		m, err := sc.Receive(ctx)
		if err != nil || m.Channel != Reliable || m.Data[0] != byte(i) {
			t.Fatalf("server's message %d: %v %v", i, m, err)
		}
		m, err = c.Receive(ctx)
		if err != nil || m.Channel != Unreliable || m.Data[0] != byte(i) {
			t.Fatalf("client's message %d: %v %v (none is lost over TCP)", i, m, err)
		}
	}
}
