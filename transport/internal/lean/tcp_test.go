//go:build !js

package lean

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/tongbu/tongbu/transport/internal/conn"
)

// newTCPTestServer is newTestServer with ICE over TCP on a loopback port.
func newTCPTestServer(t testing.TB) *testServer {
	t.Helper()
	// A 4 s handshake timeout: a stranger's silent connection is closed
	// after 2 s (the ICE timeout, half of it).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newTestServerWith(t, "127.0.0.1:0", ServerConfig{TCP: ln.(*net.TCPListener), Limits: conn.Limits{HandshakeTimeout: 4 * time.Second}})
}

// onTCP reports whether p's path is a TCP connection.
func onTCP(p *Peer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tcp != nil
}

// echoBoth sends n messages each way on each channel between a and b
// and checks that every reliable one arrives, in order, and every
// unreliable one too (over TCP nothing is lost).
func echoBoth(t *testing.T, a, b *Peer, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, pair := range [][2]*Peer{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		for i := range n {
			if err := from.SendReliable([]byte{byte(i), 'r'}); err != nil {
				t.Fatal(err)
			}
			if err := from.SendUnreliable([]byte{byte(i), 'u'}); err != nil {
				t.Fatal(err)
			}
		}
		rel, unrel := 0, 0
		for rel < n || unrel < n {
			m, err := to.Receive(ctx)
			if err != nil {
				t.Fatalf("after %d reliable and %d unreliable: %v", rel, unrel, err)
			}
			if m.Channel == conn.Reliable {
				if m.Data[0] != byte(rel) {
					t.Fatalf("reliable message %d out of order: %d", rel, m.Data[0])
				}
				rel++
			} else {
				unrel++
			}
		}
	}
}

// TestTCPPath connects a lean client over TCP only, and echoes on both
// channels: the answer offers the TCP candidate, the check and the whole
// handshake go over RFC 4571 frames, and both sides are on TCP.
func TestTCPPath(t *testing.T) {
	s := newTCPTestServer(t)
	cfg := s.dialConfig(false)
	cfg.Network = "tcp"
	var answer string
	cfg.Post = func(ctx context.Context, offer string) (string, error) {
		ans, err := s.post(ctx, offer)
		answer = ans
		return ans, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := s.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`a=candidate:\d+ 1 tcp 2124414975 127\.0\.0\.1 \d+ typ host tcptype passive`).MatchString(answer) {
		t.Errorf("the answer offers no passive TCP candidate:\n%s", answer)
	}
	if !onTCP(c) || !onTCP(sc) {
		t.Fatalf("on TCP: client %v, server %v", onTCP(c), onTCP(sc))
	}
	echoBoth(t, c, sc, 200)
	st := s.DataPath()
	if st.TCPConns != 1 || st.TCPPaths != 1 {
		t.Errorf("TCP connections %d, paths %d; want 1 and 1", st.TCPConns, st.TCPPaths)
	}
	// Closing one side closes the other, and the server forgets it all.
	c.Close()
	select {
	case <-sc.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the server's side did not close")
	}
	waitFor(t, func() bool { peers, addrs, ufrags := leanState(s); return peers+addrs+ufrags == 0 && tcpConns(s) == 0 })
}

// tcpConns counts the server's TCP connections.
func tcpConns(s *testServer) int {
	s.tcp.mu.Lock()
	defer s.tcp.mu.Unlock()
	return len(s.tcp.conns)
}

// tcpUnbound returns the TCP connections waiting for their first check.
func tcpUnbound(s *testServer) int {
	all, _ := s.tcp.unbound.Open(netip.Prefix{})
	return all
}

// TestTCPStrangersShare: one network's idle TCP connections take at most
// its share of those waiting for a first check, a network that connects
// in a loop is refused past its rate, and an honest player of another
// network connects over TCP all the while. (Before, 256 idle connections
// from one address locked every ICE-TCP player out.)
func TestTCPStrangersShare(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	byAddr := func(a netip.Addr) (netip.Prefix, bool) { p, _ := a.Prefix(32); return p, true }
	s := newTestServerWith(t, "127.0.0.1:0", ServerConfig{TCP: ln.(*net.TCPListener), Network: byAddr,
		Limits: conn.Limits{HandshakeTimeout: 30 * time.Second}})
	from := func(ip byte) *net.Dialer {
		return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, ip)}}
	}
	// ended reports whether the server closed k within d.
	ended := func(k net.Conn, d time.Duration) bool {
		k.SetReadDeadline(time.Now().Add(d))
		_, err := k.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	var idle []net.Conn
	defer func() {
		for _, k := range idle {
			k.Close()
		}
	}()
	mallory := from(2)
	for range maxUnboundPerNetwork {
		k, err := mallory.Dial("tcp", s.TCPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, k)
	}
	waitFor(t, func() bool { return tcpUnbound(s) == maxUnboundPerNetwork })
	time.Sleep(2 * time.Second) // the network's rate refills: what follows meets its share
	refused0 := s.DataPath().TCPRefused
	for range 8 {
		k, err := mallory.Dial("tcp", s.TCPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		if !ended(k, 2*time.Second) {
			t.Error("an idle connection past the network's share was kept")
		}
		k.Close()
	}
	if got := s.DataPath().TCPRefused - refused0; got != 8 {
		t.Errorf("%d connections past the share refused, want 8", got)
	}

	// Another network connects and closes in a loop: past its burst it is
	// closed as it is accepted.
	loop, refused0 := from(3), s.DataPath().TCPRefused
	for range 4 * tcpConnRate {
		k, err := loop.Dial("tcp", s.TCPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		k.Close()
	}
	waitFor(t, func() bool { return s.DataPath().TCPRefused-refused0 >= 2*tcpConnRate-2 })

	// An honest player (127.0.0.1) connects over TCP meanwhile.
	cfg := s.dialConfig(false)
	cfg.Network = "tcp"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("an honest player beside the idle connections: %v", err)
	}
	defer c.Close()
	sc, err := s.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !onTCP(c) || !onTCP(sc) {
		t.Fatalf("on TCP: client %v, server %v", onTCP(c), onTCP(sc))
	}
	echoBoth(t, c, sc, 10)
	if _, held := s.tcp.unbound.Open(netip.MustParsePrefix("127.0.0.2/32")); held != maxUnboundPerNetwork {
		t.Errorf("mallory's network holds %d connections waiting, want its share %d", held, maxUnboundPerNetwork)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for range 300 {
		if ok() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 3 s")
}

// TestTCPFallback: a client whose UDP gets no answer (the answer's UDP
// candidate is a port that drops everything, as a network that blocks
// UDP does) goes on over TCP by itself.
func TestTCPFallback(t *testing.T) {
	s := newTCPTestServer(t)
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	udpPort := fmt.Sprint(s.UDPAddr().(*net.UDPAddr).Port)
	deadPort := fmt.Sprint(dead.LocalAddr().(*net.UDPAddr).Port)
	cfg := s.dialConfig(false)
	cfg.TCPAfter = 200 * time.Millisecond
	cfg.Post = func(ctx context.Context, offer string) (string, error) {
		ans, err := s.post(ctx, offer)
		return strings.Replace(ans, " udp 2130706431 127.0.0.1 "+udpPort+" ", " udp 2130706431 127.0.0.1 "+deadPort+" ", 1), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("connected over TCP after %v", time.Since(start).Round(time.Millisecond))
	sc, err := s.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !onTCP(c) || !onTCP(sc) {
		t.Fatalf("on TCP: client %v, server %v", onTCP(c), onTCP(sc))
	}
	echoBoth(t, c, sc, 50)

	// With UDP open, the same client stays on UDP.
	cfg.Post = s.post
	u, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if onTCP(u) {
		t.Error("a client whose UDP works went over TCP")
	}
}

// TestTCPStrangers opens TCP connections that send what strangers
// could: garbage, checks with unknown credentials or a wrong MAC, a frame
// over the limit, nothing at all. Each is closed, none makes state, and
// a peer on TCP meanwhile goes on.
func TestTCPStrangers(t *testing.T) {
	s := newTCPTestServer(t)
	cfg := s.dialConfig(false)
	cfg.Network = "tcp"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := s.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc.mu.Lock()
	ufrag, remote := sc.ufrag, sc.remote.ufrag
	sc.mu.Unlock()
	frame := func(b []byte) []byte { return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...) }
	var sends [][]byte
	for range maxEarlyFrames {
		sends = append(sends, frame([]byte{99, 1, 2, 3}))
	}
	sends = append(sends, frame(mustBuild(t, "nosuch:"+remote, "x")), frame(mustBuild(t, ufrag+":"+remote, "wrong")))
	sends = append(sends, binary.BigEndian.AppendUint16(nil, maxFrame+1))
	sends = append(sends, frame([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}))
	ends := make(chan error, 32)
	for _, b := range sends {
		go func() {
			k, err := net.Dial("tcp", s.TCPAddr().String())
			if err != nil {
				ends <- err
				return
			}
			defer k.Close()
			k.Write(b)
			k.SetReadDeadline(time.Now().Add(8 * time.Second))
			_, err = k.Read(make([]byte, 64))
			ends <- err
		}()
	}
	for range sends {
		if err := <-ends; err == nil {
			t.Error("a stranger got an answer")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Error("a stranger's connection was left open")
		}
	}
	echoBoth(t, c, sc, 20)
	st := s.DataPath()
	if st.TCPPaths != 1 {
		t.Errorf("%d TCP paths taken, want 1 (the real peer's)", st.TCPPaths)
	}
	// A stranger sees its connection end when the server closes it; the
	// server forgets it just after: wait for that (bounded).
	for deadline := time.Now().Add(5 * time.Second); tcpConns(s) != 1 || tcpUnbound(s) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%d TCP connections held (want 1), %d unbound counted (want 0), 5 s after the strangers' ends", tcpConns(s), tcpUnbound(s))
			break
		}
	}
}

// FuzzTCPFrames feeds the server's reader of a TCP connection what a
// stranger's connection could send: frames of any length and content,
// STUN, DTLS, truncated headers. Nothing panics, and a connection with
// no authenticated check is never bound to a peer.
func FuzzTCPFrames(f *testing.F) {
	frame := func(b ...byte) []byte { return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...) }
	f.Add(frame(0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))
	f.Add(frame(22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1))
	f.Add(append(frame(99), 0xff, 0xff))
	f.Add([]byte{0, 0})
	s := newTCPTestServer(f)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	defer ln.Close()
	other, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		f.Fatal(err)
	}
	defer other.Close()
	go func() { // what the server answers, read and dropped
		buf := make([]byte, 4096)
		for {
			if _, err := other.Read(buf); err != nil {
				return
			}
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		f.Fatal(err)
	}
	path := newTCPPath(c.(*net.TCPConn))
	defer path.close()
	f.Fuzz(func(t *testing.T, b []byte) {
		in := tcpIn{ts: s.tcp, t: path}
		readFrames(bytes.NewReader(b), in.frame)
		if in.p != nil {
			t.Fatalf("a stranger's frames bound a peer")
		}
	})
}

// TestTCPSlowReader: a connection whose other end reads nothing never
// holds up send: the kernel's buffer, then the queue, take what they can,
// the rest is dropped whole, and what the other end reads later is whole
// frames, in order.
func TestTCPSlowReader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	far, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	near, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	p := newTCPPath(near.(*net.TCPConn))
	defer p.close()
	frame := make([]byte, 1200)
	const n = 8192 // 9.8 MB: far over the kernel's buffers and the queue
	start := time.Now()
	for i := range n {
		binary.BigEndian.PutUint32(frame, uint32(i))
		p.send(frame)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("sending to a connection that reads nothing took %v", d)
	}
	p.mu.Lock()
	queued := len(p.out)
	p.mu.Unlock()
	if queued > tcpQueued {
		t.Errorf("%d bytes queued, over the bound of %d", queued, tcpQueued)
	}
	got, last := 0, -1
	far.SetReadDeadline(time.Now().Add(2 * time.Second))
	readFrames(far, func(b []byte) bool {
		if len(b) != len(frame) {
			t.Fatalf("a frame of %d bytes, want %d", len(b), len(frame))
		}
		i := int(binary.BigEndian.Uint32(b))
		if i <= last {
			t.Fatalf("frame %d after %d", i, last)
		}
		last = i
		got++
		return true
	})
	if got == 0 || got == n {
		t.Errorf("%d of %d frames read: want some, not all", got, n)
	}
	t.Logf("%d of %d frames reached a reader that came late; the rest were dropped whole", got, n)
}

// TestTCPChecksSideBySide is a client that checks a TCP connection from
// each of its addresses during the handshake and then nominates one
// other than the first (pion's does): every check is answered, the
// nominated one is answered and becomes the path, and the others close
// when the handshake ends. A candidate's check once closed the
// connection checked before it, perhaps the one then nominated, and the
// client waited in ICE checking until its handshake timed out.
func TestTCPChecksSideBySide(t *testing.T) {
	s := newTCPTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offer := localSession{ufrag: "sbsc", pwd: "side-by-side-client-pwd0", fingerprint: make([]byte, 32), setup: "actpass", mid: "0"}
	answer, err := s.post(ctx, offer.String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := parseSession(answer)
	if err != nil {
		t.Fatal(err)
	}
	check := func(k net.Conn, nominate bool) error {
		setters := []stun.Setter{stun.TransactionID, stun.BindingRequest, stun.NewUsername(srv.ufrag + ":" + offer.ufrag)}
		if nominate {
			setters = append(setters, stun.RawAttribute{Type: stun.AttrUseCandidate})
		}
		setters = append(setters, stun.NewShortTermIntegrity(srv.pwd), stun.Fingerprint)
		m, err := stun.Build(setters...)
		if err != nil {
			return err
		}
		if _, err := k.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(m.Raw))), m.Raw...)); err != nil {
			return err
		}
		k.SetReadDeadline(time.Now().Add(3 * time.Second))
		b := make([]byte, 2048)
		if _, err := io.ReadFull(k, b[:2]); err != nil {
			return fmt.Errorf("no answer: %w", err)
		}
		n := binary.BigEndian.Uint16(b)
		if _, err := io.ReadFull(k, b[:n]); err != nil {
			return err
		}
		var ans stun.Message
		ans.Raw = b[:n]
		if err := ans.Decode(); err != nil || ans.Type != stun.BindingSuccess {
			return fmt.Errorf("answer %v: %v", ans.Type, err)
		}
		return nil
	}
	conns := make([]net.Conn, 3)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", s.TCPAddr().String()); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	// The first check binds the path and starts the handshake; the next
	// two come while it runs, then the client nominates the second.
	for i, k := range conns {
		if err := check(k, false); err != nil {
			t.Fatalf("check on connection %d: %v", i, err)
		}
	}
	if err := check(conns[1], true); err != nil {
		t.Fatalf("the nomination on connection 1: %v", err)
	}
	p := s.ufrags.get(srv.ufrag)
	if p == nil {
		t.Fatal("no peer")
	}
	p.mu.Lock()
	path, phase := p.tcp, p.phase
	p.mu.Unlock()
	if phase != phaseDTLS || path == nil || path.ap.String() != conns[1].LocalAddr().String() {
		t.Fatalf("phase %v, path %v: want the DTLS handshake on connection 1 (%v)", phase, path, conns[1].LocalAddr())
	}
	// The handshake ends (here: the peer closes, its client never sent a
	// ClientHello): every connection it kept closes.
	p.closeWith(conn.ErrClosed)
	for i, k := range conns {
		k.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := k.Read(make([]byte, 64)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("connection %d still open after the peer closed (%v)", i, err)
		}
	}
}
