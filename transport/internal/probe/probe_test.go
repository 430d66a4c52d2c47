package probe

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"
)

// TestBindingAnswer: an anonymous binding request, as a browser sends a
// STUN server, gets a binding success with its transaction ID and the
// sender's address, IPv4 and IPv6, which pion's STUN decoder reads; a
// request with credentials (ICE's checks) or of another kind is no probe.
func TestBindingAnswer(t *testing.T) {
	for _, ap := range []netip.AddrPort{
		netip.MustParseAddrPort("203.0.113.7:40000"),
		netip.MustParseAddrPort("[2001:db8::1]:5"),
		netip.MustParseAddrPort("[::ffff:198.51.100.2]:65535"),
	} {
		req := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
		if !IsAnonymousBinding(req.Raw) {
			t.Fatalf("a bare binding request is not taken")
		}
		out, ok := Answer(nil, req.Raw, ap)
		if !ok {
			t.Fatal("no answer")
		}
		m := &stun.Message{Raw: out}
		if err := m.Decode(); err != nil {
			t.Fatalf("%v: answer does not decode: %v", ap, err)
		}
		var xa stun.XORMappedAddress
		if err := xa.GetFrom(m); err != nil {
			t.Fatal(err)
		}
		want := ap.Addr().Unmap()
		if got, _ := netip.AddrFromSlice(xa.IP); m.Type != stun.BindingSuccess || m.TransactionID != req.TransactionID ||
			got.Unmap() != want || xa.Port != int(ap.Port()) {
			t.Fatalf("%v: answer %v with %v:%d", ap, m.Type, xa.IP, xa.Port)
		}
	}
	withSoftware := stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.NewSoftware("chromium"), stun.Fingerprint)
	if !IsAnonymousBinding(withSoftware.Raw) {
		t.Fatal("a request with SOFTWARE and FINGERPRINT is not taken")
	}
	for name, m := range map[string]*stun.Message{
		"username":  stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.NewUsername("a:b")),
		"integrity": stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.NewShortTermIntegrity("pwd")),
		"success":   stun.MustBuild(stun.TransactionID, stun.BindingSuccess),
		"allocate":  stun.MustBuild(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest)),
	} {
		if IsAnonymousBinding(m.Raw) {
			t.Errorf("%s: taken as an anonymous binding request", name)
		}
	}
	req := stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.NewSoftware("x"))
	for name, b := range map[string][]byte{
		"short":      req.Raw[:19],
		"length":     append(bytes.Clone(req.Raw), 0, 0, 0, 0),
		"attribute":  req.Raw[:len(req.Raw)-2],
		"cookie":     append([]byte{0, 1, 0, 0, 1, 2, 3, 4}, make([]byte, 12)...),
		"ping-sized": []byte("TBPQ0123456789a"),
	} {
		if _, ok := Answer(nil, b, netip.MustParseAddrPort("127.0.0.1:1")); ok {
			t.Errorf("%s: answered", name)
		}
	}
	if out, ok := Answer(nil, []byte("TBPQ0123456789ab"), netip.AddrPort{}); !ok || string(out) != "TBPR0123456789ab" {
		t.Fatalf("ping answered %q %v", out, ok)
	}
}

// FuzzAnswer: no input panics; what is taken as a binding request gets an
// answer pion decodes, 12 bytes longer than a bare request at most 32
// bytes for IPv4.
func FuzzAnswer(f *testing.F) {
	f.Add(stun.MustBuild(stun.TransactionID, stun.BindingRequest).Raw)
	f.Add(stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.NewSoftware("x"), stun.Fingerprint).Raw)
	f.Add([]byte("TBPQ0123456789ab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := Answer(nil, b, netip.MustParseAddrPort("192.0.2.1:9"))
		if !ok || IsPing(b) {
			return
		}
		m := &stun.Message{Raw: out}
		if err := m.Decode(); err != nil || m.Type != stun.BindingSuccess || len(out) != 32 {
			t.Fatalf("answer %x: %v", out, err)
		}
	})
}
