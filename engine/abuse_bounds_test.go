//go:build !js

package engine

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

// abuseServer runs a server as tongbu serve does, on a listener with lc,
// and a room "r" of players players at 30 Hz.
func abuseServer(t *testing.T, lc transport.ListenerConfig, players int) (*Server, string) {
	t.Helper()
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true, ClientNetworks: lc.Networks})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := HTTPServer("", s.Handler())
	go hs.Serve(transport.NewListener(ln, lc))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-served
		hs.Close()
	})
	if _, err := s.CreateRoom("r", lockstep.Config{Players: players, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	return s, "http://" + ln.Addr().String()
}

// honestPlay is an honest room's players over real WebRTC, each playing
// in its own goroutine and timing the gaps between the frames it gets.
type honestPlay struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	gaps  []time.Duration
	drops int
}

func playHonest(t *testing.T, s *Server, url string, players int) *honestPlay {
	t.Helper()
	h := &honestPlay{stop: make(chan struct{})}
	var clients []*Client
	for i := range players {
		tk, _ := s.Ticket(fmt.Sprintf("honest%d", i), "r", RolePlayer, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := Dial(ctx, url, tk, &ClientConfig{IncludeLoopback: true})
		cancel()
		if err != nil {
			t.Fatalf("honest player %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	for _, c := range clients {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			var last time.Time
			for {
				select {
				case <-h.stop:
					return
				case <-c.Done():
					h.mu.Lock()
					h.drops++
					h.mu.Unlock()
					return
				case <-time.After(2 * time.Millisecond):
				}
				now := time.Now()
				if err := c.Update(now); err != nil {
					continue
				}
				if len(c.Lockstep().Advance(now).Frames) == 0 {
					continue
				}
				if !last.IsZero() {
					h.mu.Lock()
					h.gaps = append(h.gaps, now.Sub(last))
					h.mu.Unlock()
				}
				last = now
			}
		}()
	}
	return h
}

// window returns the largest gap and the players dropped since the last
// call, and starts a new window.
func (h *honestPlay) window() (maxGap time.Duration, drops int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.gaps) > 0 {
		maxGap = slices.Max(h.gaps)
	}
	drops = h.drops
	h.gaps, h.drops = h.gaps[:0], 0
	return maxGap, drops
}

func (h *honestPlay) end() {
	close(h.stop)
	h.wg.Wait()
}

// honestJoins joins n more players one after another (spectators, so the
// room has seats for them) and returns the slowest join; a refusal fails
// the test.
func honestJoins(t *testing.T, s *Server, url string, n int) time.Duration {
	t.Helper()
	var slowest time.Duration
	for i := range n {
		tk, _ := s.Ticket(fmt.Sprintf("late%d", i), "r", RoleSpectator, time.Minute)
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := Dial(ctx, url, tk, &ClientConfig{IncludeLoopback: true})
		cancel()
		if err != nil {
			t.Fatalf("an honest join under attack: %v", err)
		}
		slowest = max(slowest, time.Since(began))
		c.Close()
	}
	return slowest
}

// generous is the largest frame gap an attack may cause in a test, for a
// quiet one of quiet: twice it and a quarter second, and at least a
// second, for a loaded CI machine with the race detector on. The holes
// this guards against froze rooms for seconds; bench abuse holds the
// attacks to twice the quiet gap.
func generous(quiet time.Duration) time.Duration {
	return max(2*quiet+250*time.Millisecond, time.Second)
}

// TestAbuseOneTicket is issue 34's lock-out with one valid ticket: 300
// slow offers that all carry it, reopened as each is cut off, hold two
// handshake slots at most; honest players join without a 429 and the
// honest room plays on.
func TestAbuseOneTicket(t *testing.T) {
	s, url := abuseServer(t, transport.ListenerConfig{}, 2)
	play := playHonest(t, s, url, 2)
	defer play.end()
	time.Sleep(time.Second)
	quiet, _ := play.window()

	ticket, _ := s.Ticket("mallory", "r", RolePlayer, time.Hour)
	addr := url[len("http://"):]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\nAuthorization: Bearer %s\r\nContent-Length: 100000\r\n\r\nv=0\r\n", ConnectPath, ticket)
				done := make(chan struct{})
				go func() { // read until the server ends it (429 at once, or 408)
					c.Read(make([]byte, 512))
					close(done)
				}()
				began := time.Now()
				select {
				case <-stop:
					c.Close()
					<-done
					return
				case <-done:
					c.Close()
				}
				if time.Since(began) < 100*time.Millisecond {
					// Refused at once (429): back after the second its
					// Retry-After asks, not in a spin (TestAbuse floods).
					select {
					case <-stop:
						return
					case <-time.After(time.Second):
					}
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	if p := s.handshakes(); p > 2 {
		t.Errorf("one ticket holds %d handshakes", p)
	}
	slowest := honestJoins(t, s, url, 5)
	time.Sleep(time.Second)
	attacked, drops := play.window()
	close(stop)
	wg.Wait()
	t.Logf("largest frame gap %v quiet, %v under attack; slowest honest join %v", quiet, attacked, slowest)
	if drops > 0 {
		t.Errorf("%d honest players dropped", drops)
	}
	if attacked > generous(quiet) {
		t.Errorf("largest frame gap %v under attack, %v quiet", attacked, quiet)
	}
}

// TestAbuseIdleKeepAlives is issue 34's descriptor exhaustion: idle
// keep-alive connections from many addresses (here 16 from each of 64
// loopback addresses, bounded like any other) fill the listener's MaxConns, and
// still every honest join and page fetch gets in, in place of the
// longest idle.
func TestAbuseIdleKeepAlives(t *testing.T) {
	const maxConns = 200
	s, url := abuseServer(t, transport.ListenerConfig{MaxConns: maxConns, Networks: transport.ClientNetworks{BoundLoopback: true}}, 2)
	play := playHonest(t, s, url, 2)
	defer play.end()
	time.Sleep(time.Second)
	quiet, _ := play.window()

	addr := url[len("http://"):]
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for a := range 64 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 2, byte(1+a))}}
		for range 16 { // the most one network may open at once
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", HealthPath)
			idle = append(idle, c)
		}
	}
	time.Sleep(300 * time.Millisecond)
	slowest := honestJoins(t, s, url, 5)
	resp, err := http.Get(url + HealthPath)
	if err != nil {
		t.Fatalf("a page under attack: %v", err)
	}
	resp.Body.Close()
	time.Sleep(time.Second)
	attacked, drops := play.window()
	t.Logf("largest frame gap %v quiet, %v under attack; slowest honest join %v", quiet, attacked, slowest)
	if drops > 0 {
		t.Errorf("%d honest players dropped", drops)
	}
	if attacked > generous(quiet) {
		t.Errorf("largest frame gap %v under attack, %v quiet", attacked, quiet)
	}
}
