package record

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/selfsign"

	"github.com/tongbu/tongbu/internal/prefetch"
)

// tapConn is a PacketConn whose reads can be diverted to the test once
// the handshake is over.
type tapConn struct {
	net.PacketConn
	mu  sync.Mutex
	tap chan []byte
}

func (c *tapConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(b)
		if err != nil {
			return n, addr, err
		}
		c.mu.Lock()
		tap := c.tap
		c.mu.Unlock()
		if tap == nil {
			return n, addr, nil
		}
		tap <- bytes.Clone(b[:n])
	}
}

func handshake(t *testing.T) (client, server *dtls.Conn, sc *tapConn) {
	t.Helper()
	cert, err := selfsign.GenerateSelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &dtls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true,
		CipherSuites: []dtls.CipherSuiteID{SuiteID}, ClientAuth: dtls.RequireAnyClientCert}
	a, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc = &tapConn{PacketConn: b}
	client, err = dtls.Client(a, b.LocalAddr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	server, err = dtls.Server(sc, a.LocalAddr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- server.HandshakeContext(ctx) }()
	if err := client.HandshakeContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server, sc
}

// TestInterop: records pion/dtls seals, the inline cipher opens, and the
// other way round; replays and forgeries are refused.
func TestInterop(t *testing.T) {
	client, server, sc := handshake(t)
	ss, _ := server.ConnectionState()
	scph, err := FromState(&ss)
	if err != nil {
		t.Fatal(err)
	}
	// pion's client writes; the server's inline cipher opens it.
	tap := make(chan []byte, 4)
	sc.mu.Lock()
	sc.tap = tap
	sc.mu.Unlock()
	if _, err := client.Write([]byte("from pion")); err != nil {
		t.Fatal(err)
	}
	var dgram []byte
	select {
	case dgram = <-tap:
	case <-time.After(5 * time.Second):
		t.Fatal("no datagram")
	}
	h, body, _, err := Next(dgram)
	if err != nil || h.Type != ApplicationData {
		t.Fatalf("%+v %v", h, err)
	}
	got, err := scph.Open(h, bytes.Clone(body))
	if err != nil || string(got) != "from pion" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := scph.Open(h, bytes.Clone(body)); !errors.Is(err, ErrReplay) {
		t.Errorf("replay: %v", err)
	}
	forged := bytes.Clone(body)
	forged[len(forged)-1] ^= 1
	h.Seq++
	if _, err := scph.Open(h, forged); !errors.Is(err, ErrAuth) {
		t.Errorf("forgery: %v", err)
	}
	// The inline client, taking over where pion's stopped, seals; the
	// inline server opens.
	cs, _ := client.ConnectionState()
	cc, err := FromState(&cs)
	if err != nil {
		t.Fatal(err)
	}
	rec := cc.Seal(nil, ApplicationData, []byte("inline"))
	h, body, rest, err := Next(rec)
	if err != nil || len(rest) != 0 {
		t.Fatal(err)
	}
	if got, err := scph.Open(h, body); err != nil || string(got) != "inline" {
		t.Fatalf("inline open: %q %v", got, err)
	}
	// The inline server seals; pion's client reads it.
	if _, err := sc.PacketConn.WriteTo(scph.Seal(nil, ApplicationData, []byte("to pion")), client.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := client.Read(buf)
	if err != nil || string(buf[:n]) != "to pion" {
		t.Fatalf("pion read %q %v", buf[:n], err)
	}
}

func TestReplayWindow(t *testing.T) {
	var c Cipher
	for _, tc := range []struct {
		seq   uint64
		fresh bool
	}{{5, true}, {5, false}, {3, true}, {3, false}, {100, true}, {37, true}, {36, false}, {5, false}, {99, true}, {100, false}} {
		if got := c.fresh(tc.seq); got != tc.fresh {
			t.Errorf("seq %d fresh %v, want %v", tc.seq, got, tc.fresh)
		}
		if c.fresh(tc.seq) {
			c.mark(tc.seq)
		}
	}
}

func FuzzNext(f *testing.F) {
	c, _ := New(make([]byte, 16), make([]byte, 4), make([]byte, 16), make([]byte, 4))
	f.Add(c.Seal(nil, ApplicationData, []byte("hello")))
	f.Add(append(c.Seal(nil, Alert, []byte{1, 0}), c.Seal(nil, ApplicationData, []byte("x"))...))
	f.Add([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			h, body, rest, err := Next(b)
			if err != nil {
				return
			}
			if len(body) != h.Len || len(rest) >= len(b) {
				t.Fatalf("record of %d bytes: body %d rest %d", len(b), len(body), len(rest))
			}
			c.Open(h, body)
			b = rest
		}
	})
}

// TestSealInPlace: a record sealed where its payload was written is the
// record Seal makes, opens on the other side, and costs no allocation.
func TestSealInPlace(t *testing.T) {
	key, iv := bytes.Repeat([]byte{7}, 16), []byte{1, 2, 3, 4}
	a, err := New(key, iv, key, iv)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(key, iv, key, iv)
	for _, n := range []int{0, 1, 100, 1200} {
		payload := bytes.Repeat([]byte{byte(n)}, n)
		want := b.Seal(nil, ApplicationData, payload)
		buf := make([]byte, Prefix, Prefix+n+TagLen)
		buf = append(buf, payload...)
		got := a.SealInPlace(buf, ApplicationData)
		if !bytes.Equal(got, want) || &got[0] != &buf[0] {
			t.Fatalf("%d bytes: in place %x, want %x (in the same memory)", n, got, want)
		}
		h, body, rest, err := Next(got)
		if err != nil || len(rest) != 0 {
			t.Fatal(err)
		}
		pt, err := b.Open(h, body)
		if err != nil || !bytes.Equal(pt, payload) {
			t.Fatalf("%d bytes: opened %x, %v", n, pt, err)
		}
	}
	buf := make([]byte, 0, Prefix+100+TagLen)
	open := make([]byte, 0, Prefix+100+TagLen)
	if allocs := testing.AllocsPerRun(100, func() {
		rec := a.SealInPlace(buf[:Prefix+100], ApplicationData)
		open = append(open[:0], rec...)
		h, body, _, _ := Next(open)
		if _, err := b.Open(h, body); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations a record sealed and opened", allocs)
	}
}

// TestSpans: the memory a server asks for before it opens or seals a
// peer's records is the Cipher's and, for each side, that side's own
// AEAD.
func TestSpans(t *testing.T) {
	c, err := New(bytes.Repeat([]byte{1}, 16), make([]byte, 4), bytes.Repeat([]byte{2}, 16), make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	open, seal := c.Spans(true), c.Spans(false)
	if want := prefetch.SpanOf(unsafe.Pointer(c), unsafe.Sizeof(*c)); open[0] != want || seal[0] != want {
		t.Fatalf("the cipher's span: %v and %v, want %v", open[0], seal[0], want)
	}
	if open[1] == (prefetch.Span{}) || seal[1] == (prefetch.Span{}) || open[1] == seal[1] {
		t.Fatalf("the AEADs' spans: open %v, seal %v: want two, apart", open[1], seal[1])
	}
	open[1].Warm()
	seal[1].Warm()
	if got := c.Seal(nil, ApplicationData, []byte("still")); len(got) != Prefix+5+TagLen {
		t.Fatalf("a record after the warm hints: %d bytes", len(got))
	}
}
