//go:build !js

package transport

import (
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// TestRegionPing: the server's UDP socket answers a region ping (SPEC.md
// §6.5) with the same 16 bytes, "TBPR" first, and a STUN binding request
// without credentials (a browser's, to a STUN server) with the client's
// address; a datagram of another size or magic gets nothing, nor does a
// binding request with credentials it cannot check; a flood is answered
// within the socket's rate (4,096 a second), never more bytes than it
// sent. Both stacks.
func TestRegionPing(t *testing.T) {
	for _, stack := range []Stack{StackLean, StackPion} {
		t.Run(stack.String(), func(t *testing.T) { testRegionPing(t, stack) })
	}
}

func testRegionPing(t *testing.T, stack Stack) {
	s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0", Stack: stack})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.DialUDP("udp", nil, s.UDPAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ping := []byte("TBPQ0123456789ab")
	read := func(d time.Duration) ([]byte, bool) {
		buf := make([]byte, 64)
		c.SetReadDeadline(time.Now().Add(d))
		n, err := c.Read(buf)
		return buf[:n], err == nil
	}
	c.Write(ping)
	if got, ok := read(2 * time.Second); !ok || string(got) != "TBPR0123456789ab" {
		t.Fatalf("answer %q %v", got, ok)
	}
	bind := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
	c.Write(bind.Raw)
	got, ok := read(2 * time.Second)
	m := &stun.Message{Raw: got}
	var xa stun.XORMappedAddress
	if !ok || m.Decode() != nil || xa.GetFrom(m) != nil || m.TransactionID != bind.TransactionID || xa.Port != c.LocalAddr().(*net.UDPAddr).Port {
		t.Fatalf("binding answer %x %v", got, ok)
	}
	checked := stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.NewUsername("nobody:here"), stun.NewShortTermIntegrity("x"), stun.Fingerprint)
	for _, bad := range [][]byte{[]byte("TBPQ0123456789abc"), []byte("TBPQ0123"), []byte("TBPX0123456789ab"), []byte("TBPR0123456789ab"), checked.Raw} {
		c.Write(bad)
		if got, ok := read(100 * time.Millisecond); ok {
			t.Fatalf("%q answered with %q", bad, got)
		}
	}
	// A flood of 20,000 in well under a second.
	start := time.Now()
	for range 20000 {
		c.Write(ping)
	}
	sent := time.Since(start)
	answers := 0
	for {
		if _, ok := read(200 * time.Millisecond); !ok {
			break
		}
		answers++
	}
	limit := 4096 + int(sent.Seconds()*4096) + 1
	t.Logf("20,000 pings in %v: %d answered (at most %d)", sent, answers, limit)
	if answers == 0 || answers > limit {
		t.Fatalf("%d of 20,000 pings answered in %v, want 1 to %d", answers, sent, limit)
	}
}
