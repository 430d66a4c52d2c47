//go:build !js

package transport

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// remoteAs makes every connection a listener accepts report addr as its
// remote address: a test's loopback connections stand for a client on the
// internet.
type remoteAs struct {
	net.Listener
	addr net.Addr
}

func (l remoteAs) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c, l.addr}, nil
}

type remoteConn struct {
	net.Conn
	addr net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.addr }

// TestLimitListener: a third connection from one address is closed at
// once while two are open, and is taken again once one of them closes;
// loopback connections are not limited.
func TestLimitListener(t *testing.T) {
	for _, tt := range []struct {
		name    string
		remote  string
		limited bool
	}{
		{"internet address", "203.0.113.7:40000", true},
		{"loopback", "127.0.0.1:40000", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			remote, _ := net.ResolveTCPAddr("tcp", tt.remote)
			hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
			go hs.Serve(LimitListener(remoteAs{ln, remote}, 2))
			defer hs.Close()

			get := func(c net.Conn) error {
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					return err
				}
				_, err := io.ReadFull(c, make([]byte, 12))
				return err
			}
			dial := func() net.Conn {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			a, b := dial(), dial()
			for _, c := range []net.Conn{a, b} { // both served, and kept alive
				if err := get(c); err != nil {
					t.Fatal(err)
				}
			}
			if err := get(dial()); (err != nil) != tt.limited {
				t.Fatalf("a third connection: %v, want limited %v", err, tt.limited)
			}
			if !tt.limited {
				return
			}
			a.Close()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if err := get(dial()); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no connection taken after one of the two closed")
				}
			}
		})
	}
}

// TestListenerMaxConns: at MaxConns, a new connection closes the one idle
// the longest between requests (the HTTP server reports idleness through
// ConnState) and is served; with none idle, it is closed itself. One IPv6
// /64 counts as one client network.
func TestListenerMaxConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	hs := &http.Server{ConnState: ConnState, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-block
		}
		io.WriteString(w, "ok")
	})}
	lim := NewListener(ln, ListenerConfig{MaxConns: 3, Networks: ClientNetworks{BoundLoopback: true}, PerNetwork: 100})
	go hs.Serve(lim)
	defer hs.Close()
	defer close(block)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn, path string) error {
		c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
			return err
		}
		_, err := io.ReadFull(c, make([]byte, 12))
		return err
	}
	closed := func(c net.Conn) bool { // the rest of its last answer, then the end
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err := io.Copy(io.Discard, c)
		return !errors.Is(err, os.ErrDeadlineExceeded)
	}
	first, second := dial(), dial()
	for _, c := range []net.Conn{first, second} {
		if err := get(c, "/"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // first is idle the longest
	}
	busy := dial()
	fmt.Fprintf(busy, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	fourth := dial()
	if err := get(fourth, "/"); err != nil {
		t.Fatalf("a fourth connection at the bound: %v", err)
	}
	if !closed(first) {
		t.Fatal("the connection idle the longest was not closed")
	}
	// Second and fourth idle, second the longer: a fifth takes its place.
	fifth := dial()
	if err := get(fifth, "/"); err != nil {
		t.Fatalf("a fifth connection: %v", err)
	}
	if !closed(second) {
		t.Fatal("the second connection, idle the longest, was not closed")
	}
	fmt.Fprintf(fourth, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	fmt.Fprintf(fifth, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	if !closed(dial()) { // none idle: the new one goes
		t.Fatal("a connection served at the bound with none idle")
	}
	if l := lim.(*limitListener); l.evicted.Load() != 2 {
		t.Fatalf("%d evicted, want 2", l.evicted.Load())
	}
}

// listenFrom returns a Listener of cfg on a loopback port whose
// connections report as their remote address what from returns as each
// is accepted ("host:port"): loopback connections stand for clients on
// the internet. It returns the listener and the address to dial.
func listenFrom(t *testing.T, cfg ListenerConfig, from func() string) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(shiftingRemote{ln, func() net.Addr {
		a, _ := net.ResolveTCPAddr("tcp", from())
		return a
	}}, cfg)
	t.Cleanup(func() { l.Close() })
	return l, ln.Addr().String()
}

// TestListenerPerNetwork: the addresses of one IPv6 /64 share
// PerNetwork; another /64 does not.
func TestListenerPerNetwork(t *testing.T) {
	var mu sync.Mutex
	next := 0
	addrs := []string{"[2001:db8:1:1::1]:1", "[2001:db8:1:1::2]:1", "[2001:db8:1:1:ffff::3]:1", "[2001:db8:1:2::1]:1"}
	l, at := listenFrom(t, ListenerConfig{PerNetwork: 2}, func() string {
		mu.Lock()
		defer mu.Unlock()
		next++
		return addrs[(next-1)%len(addrs)]
	})
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var got []string
	for range 4 {
		c, err := net.Dial("tcp", at)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for deadline := time.After(2 * time.Second); len(got) < 3; {
		select {
		case c := <-accepted:
			got = append(got, c.RemoteAddr().String())
		case <-deadline:
			t.Fatalf("accepted %v", got)
		}
	}
	select {
	case c := <-accepted:
		t.Fatalf("a third connection of one /64 accepted: %v (and %v)", c.RemoteAddr(), got)
	case <-time.After(200 * time.Millisecond):
	}
	if got[2] != "[2001:db8:1:2::1]:1" {
		t.Fatalf("accepted %v: want the other /64's third", got)
	}
}

// shiftingRemote gives each connection it accepts the next address.
type shiftingRemote struct {
	net.Listener
	next func() net.Addr
}

func (l shiftingRemote) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c, l.next()}, nil
}

// TestListenerFairEviction: at MaxConns, a network that holds its share
// (a quarter of PerNetwork) is refused rather than make room, and a
// newcomer's connection takes the place of the heavy network's idle one.
func TestListenerFairEviction(t *testing.T) {
	var mu sync.Mutex
	from := "127.0.0.1"
	lim, at := listenFrom(t, ListenerConfig{MaxConns: 8, PerNetwork: 16}, func() string {
		mu.Lock()
		defer mu.Unlock()
		return from + ":1"
	})
	hs := &http.Server{ConnState: ConnState, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go hs.Serve(lim)
	defer hs.Close()
	var heavy []net.Conn
	open := func(as string) (net.Conn, error) {
		mu.Lock()
		from = as
		mu.Unlock()
		c, err := net.Dial("tcp", at)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		_, err = io.ReadFull(c, make([]byte, 12))
		return c, err
	}
	for range 8 { // the attacker fills the listener: 8 of its 16, idle
		c, err := open("203.0.113.9")
		if err != nil {
			t.Fatal(err)
		}
		heavy = append(heavy, c)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := open("203.0.113.9"); err == nil {
		t.Fatal("the network that fills the listener made room for its ninth")
	}
	if _, err := open("198.51.100.4"); err != nil {
		t.Fatalf("a newcomer at the bound: %v", err)
	}
	if l := lim.(*limitListener); l.evicted.Load() != 1 {
		t.Fatalf("%d evicted, want 1", l.evicted.Load())
	}
}

// TestListenerConnRate: one client network opens at most 2*ConnRate
// connections at once and ConnRate a second after; the rest are closed as
// they are accepted, and another network is not affected.
func TestListenerConnRate(t *testing.T) {
	var mu sync.Mutex
	from := "203.0.113.9"
	l, at := listenFrom(t, ListenerConfig{ConnRate: 4, PerNetwork: 100}, func() string {
		mu.Lock()
		defer mu.Unlock()
		return from + ":1"
	})
	accepted := make(chan net.Conn, 100)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	burst := func(as string, n int) int {
		mu.Lock()
		from = as
		mu.Unlock()
		for range n {
			c, err := net.Dial("tcp", at)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		got := 0
		for {
			select {
			case c := <-accepted:
				defer c.Close()
				got++
			case <-time.After(200 * time.Millisecond):
				return got
			}
		}
	}
	if got := burst("203.0.113.9", 20); got != 8 {
		t.Fatalf("%d of a burst of 20 accepted, want 8 (twice the rate)", got)
	}
	if got := burst("198.51.100.4", 3); got != 3 {
		t.Fatalf("another network: %d of 3 accepted", got)
	}
	time.Sleep(time.Second)
	if got := burst("203.0.113.9", 20); got < 4 || got > 6 {
		t.Fatalf("%d accepted a second later, want about 4 (the rate)", got)
	}
}

// TestListenerSeesThroughTLS: behind an HTTPS server, a Listener still
// knows which connections sit idle, and closes the one idle the longest
// to make room at its MaxConns.
func TestListenerSeesThroughTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	ts.Listener.Close()
	ts.Listener = NewListener(ln, ListenerConfig{MaxConns: 2, Networks: ClientNetworks{BoundLoopback: true}, PerNetwork: 100})
	ts.Config.ConnState = ConnState
	ts.StartTLS()
	defer ts.Close()
	dial := func() *tls.Conn {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return c
	}
	first := dial()
	time.Sleep(20 * time.Millisecond)
	dial()
	time.Sleep(20 * time.Millisecond)
	dial() // at the bound: the idle first makes room
	first.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := first.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the HTTPS connection idle the longest was not closed at the bound")
	}
}
