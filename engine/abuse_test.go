//go:build !js

package engine

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestAbuse runs a server as tongbu serve does (HTTPServer on a
// LimitListener, over real WebRTC on loopback) while it is attacked: slow
// headers, slow offer bodies with a valid ticket, idle keep-alive
// connections and a flood of forged tickets. A real player still joins
// and plays, the slow and idle connections are cut off, and nothing is
// left behind once the attack ends.
func TestAbuse(t *testing.T) {
	base := runtime.NumGoroutine()
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := HTTPServer("", s.Handler())
	hs.ReadHeaderTimeout, hs.IdleTimeout = 500*time.Millisecond, 500*time.Millisecond // the defaults, scaled down
	go hs.Serve(transport.LimitListener(ln, transport.DefaultConnsPerAddr))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	if _, err := s.CreateRoom("r", lockstep.Config{Players: 2, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var attackers []net.Conn
	defer func() {
		for _, c := range attackers {
			c.Close()
		}
	}()
	for range 40 { // headers that never end
		c := dial()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\n", ConnectPath)
		attackers = append(attackers, c)
	}
	spent, _ := s.Ticket("mallory", "r", RolePlayer, time.Minute)
	for range 40 { // an offer body that never comes, with a valid ticket
		c := dial()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\nAuthorization: Bearer %s\r\nContent-Length: 100000\r\n\r\nv=0\r\n", ConnectPath, spent)
		attackers = append(attackers, c)
	}
	for range 40 { // idle keep-alives
		c := dial()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", HealthPath)
		attackers = append(attackers, c)
	}
	stop := make(chan struct{})
	flooded := make(chan int)
	go func() { // forged tickets, as fast as they are answered
		n := 0
		defer func() { flooded <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+ConnectPath, strings.NewReader("v=0"))
			req.Header.Set("Content-Type", "application/sdp")
			req.Header.Set("Authorization", "Bearer forged")
			req.Header.Set(WireHeader, strconv.Itoa(wireVersion))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				n++
			}
		}
	}()

	tk, _ := s.Ticket("alice", "r", RolePlayer, time.Minute)
	began := time.Now()
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := Dial(dctx, "http://"+addr, tk, &ClientConfig{IncludeLoopback: true})
	dcancel()
	if err != nil {
		t.Fatalf("a player under attack: %v", err)
	}
	joined := time.Since(began)
	frames := 0
	for deadline := time.Now().Add(10 * time.Second); frames < 10 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		now := time.Now()
		if err := c.Update(now); err != nil {
			t.Fatal(err)
		}
		frames += len(c.Lockstep().Advance(now).Frames)
	}
	close(stop)
	forged := <-flooded
	if frames < 10 {
		t.Fatalf("%d frames played under attack in 10 s", frames)
	}
	t.Logf("joined in %v under attack; %d forged tickets refused meanwhile", joined.Round(time.Millisecond), forged)

	// Every attacking connection is cut off by the server: the slow
	// headers and the idle ones by the HTTP timeouts, the slow bodies by
	// the offer timeout (408).
	for i, a := range attackers {
		a.SetReadDeadline(time.Now().Add(15 * time.Second))
		buf := make([]byte, 4096)
		for {
			if _, err := a.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("attacker %d still connected after 15 s", i)
				}
				break
			}
		}
	}
	if s.handshakes() != 0 {
		t.Fatalf("%d handshakes held after the attack", s.handshakes())
	}
	c.Close()
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	hs.Close()
	http.DefaultClient.CloseIdleConnections()
	for deadline := time.Now().Add(15 * time.Second); runtime.NumGoroutine() > base+2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
	}
}

// TestChurn: 500 joins and leaves of one room leave the goroutine count
// and the live heap where they were, within a bound.
func TestChurn(t *testing.T) {
	h := newHarness(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.s.Serve(ctx) }()
	room, err := h.s.CreateRoom("r", lockstep.Config{Players: 2, Hz: 30})
	if err != nil {
		t.Fatal(err)
	}
	open := func() int {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return len(h.s.peers) + room.Connected()
	}
	cycle := func() {
		c, err := h.join("alice", "r", RolePlayer, memnet.LinkConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Update(time.Now()); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	settle := func() (int, uint64) {
		for deadline := time.Now().Add(10 * time.Second); open() > 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections still held", open())
			}
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}
	for range 20 { // warm up: pools, maps and the room's first buffers
		cycle()
	}
	g0, heap0 := settle()
	for range 500 {
		cycle()
	}
	var g1 int
	var heap1 uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if g1, heap1 = settle(); g1 <= g0+2 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("after 500 cycles: goroutines %d -> %d, heap %d -> %d KiB", g0, g1, heap0>>10, heap1>>10)
	if g1 > g0+2 {
		t.Fatalf("goroutines %d after 500 join/leave cycles, %d before", g1, g0)
	}
	if heap1 > heap0+1<<20 {
		t.Fatalf("live heap grew by %d KiB over 500 join/leave cycles", (heap1-heap0)>>10)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
