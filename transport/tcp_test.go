//go:build !js

package transport

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// TestICETCP connects the native lean client over TCP only to a server of
// each stack that serves ICE-TCP beside UDP, and echoes on both channels:
// the lean server's own framing and pion's TCP mux speak the same RFC
// 6544 and 4571.
func TestICETCP(t *testing.T) {
	for _, stack := range []Stack{StackLean, StackPion} {
		t.Run(stack.String(), func(t *testing.T) {
			s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Stack: stack})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.TCPAddr() == nil {
				t.Fatal("no TCP address")
			}
			hs := httptest.NewServer(s)
			defer hs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			c, err := Dial(ctx, hs.URL, &ClientConfig{Network: "tcp"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sc, err := s.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
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
			if stack == StackLean && s.DataPath().TCPPaths != 1 {
				t.Errorf("TCP paths %d, want 1", s.DataPath().TCPPaths)
			}
		})
	}
}
