//go:build !js

package transport

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// FuzzReceived feeds a connection's intake what a peer's data channels
// could carry: (channel, length, bytes) triples. Each message within the
// channel's limit reaches the reader unchanged, an empty one (a keepalive)
// reaches nobody, and one over the limit closes the connection with
// ErrTooLarge and is not delivered.
func FuzzReceived(f *testing.F) {
	f.Add([]byte{0, 3, 'a', 'b', 'c', 1, 0, 1, 2, 'h', 'i'})
	f.Add([]byte{0, 200})
	f.Add(append([]byte{1, 255}, bytes.Repeat([]byte{7}, 255)...))
	lim := Limits{MaxUnreliable: 64, MaxReliable: 128}.WithDefaults()
	log := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, data []byte) {
		pc, err := webrtc.NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := newRTCConn(1, pc, lim, log)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for len(data) >= 2 {
			ch, n := Channel(data[0]&1), int(data[1])
			data = data[2:]
			n = min(n, len(data))
			msg := bytes.Clone(data[:n])
			data = data[n:]
			c.received(ch, msg)
			got, ok := c.TryReceive()
			limit := lim.MaxUnreliable
			if ch == Reliable {
				limit = lim.MaxReliable
			}
			switch {
			case n > limit:
				if ok {
					t.Fatalf("a %d-byte message over the %d limit was delivered", n, limit)
				}
				select {
				case <-c.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("a message over the limit did not close the connection")
				}
				if !errors.Is(c.Err(), ErrTooLarge) {
					t.Fatalf("closed with %v, want ErrTooLarge", c.Err())
				}
				return
			case n == 0:
				if ok {
					t.Fatalf("a keepalive was delivered: %+v", got)
				}
			case !ok || got.Channel != ch || !bytes.Equal(got.Data, msg):
				t.Fatalf("sent %d bytes on %s, got %+v (%v)", n, ch, got, ok)
			}
		}
	})
}

// FuzzSignaling feeds the signaling handler arbitrary offers, content
// types, authorization headers and query strings: it answers every one
// with a status it documents, and never panics.
func FuzzSignaling(f *testing.F) {
	var (
		once  sync.Once
		s     *Server
		offer string
	)
	setup := func(t *testing.T) {
		once.Do(func() {
			var err error
			s, err = NewServer(ServerConfig{
				UDPAddr: "127.0.0.1:0", IncludeLoopback: true, MaxPending: 1 << 20, MaxPendingPerAddr: 1 << 20,
				Limits:    Limits{HandshakeTimeout: 100 * time.Millisecond},
				Authorize: bearer,
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	offer, _ = offerOnly(f)
	f.Cleanup(func() {
		if s != nil {
			s.Close()
		}
	})
	f.Add(offer, "application/sdp", "Bearer good", "")
	f.Add("v=0\r\no=- 0 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n", "application/sdp; charset=utf-8", "Bearer good", "ticket=x")
	f.Add("\x00\xff", "text/plain", "Bearer forged", "a=%zz")
	f.Add(strings.Repeat("a=x\r\n", 4000), "application/sdp", "Bearer good", "")
	documented := map[int]bool{
		http.StatusCreated: true, http.StatusBadRequest: true, http.StatusForbidden: true,
		http.StatusRequestTimeout: true, http.StatusRequestEntityTooLarge: true,
		http.StatusUnsupportedMediaType: true, http.StatusTooManyRequests: true,
	}
	f.Fuzz(func(t *testing.T, body, ctype, auth, query string) {
		setup(t)
		req := httptest.NewRequest(http.MethodPost, "/connect", strings.NewReader(body))
		req.URL.RawQuery = query
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if !documented[rec.Code] {
			t.Fatalf("status %d (%s) is not one SPEC.md documents", rec.Code, rec.Body.String())
		}
		if rec.Code != http.StatusCreated && rec.Body.Len() == 0 {
			t.Fatalf("status %d with no explanation", rec.Code)
		}
	})
}
