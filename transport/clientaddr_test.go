//go:build !js

package transport

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClientNetworks(t *testing.T) {
	proxy := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	for _, tc := range []struct {
		name    string
		nets    ClientNetworks
		remote  string
		headers map[string][]string
		want    string // the network counted, "" when unbounded
	}{
		{"ipv4", ClientNetworks{}, "203.0.113.7:4000", nil, "203.0.113.7/32"},
		{"ipv4 prefix", ClientNetworks{IPv4Prefix: 24}, "203.0.113.7:4000", nil, "203.0.113.0/24"},
		{"ipv6 host's /64", ClientNetworks{}, "[2001:db8:1:2:aaaa::1]:4000", nil, "2001:db8:1:2::/64"},
		{"ipv6 prefix", ClientNetworks{IPv6Prefix: 48}, "[2001:db8:1:2::1]:4000", nil, "2001:db8:1::/48"},
		{"ipv4 in ipv6", ClientNetworks{}, "[::ffff:203.0.113.7]:4000", nil, "203.0.113.7/32"},
		{"loopback", ClientNetworks{}, "127.0.0.1:4000", nil, ""},
		{"loopback bounded", ClientNetworks{BoundLoopback: true}, "127.0.0.1:4000", nil, "127.0.0.1/32"},
		{"untrusted peer's header is ignored", ClientNetworks{}, "203.0.113.7:4000",
			map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, "203.0.113.7/32"},
		{"trusted proxy", ClientNetworks{TrustedProxies: proxy}, "10.1.1.1:4000",
			map[string][]string{"X-Forwarded-For": {"198.51.100.1"}}, "198.51.100.1/32"},
		{"a client's own header before the proxy's", ClientNetworks{TrustedProxies: proxy}, "10.1.1.1:4000",
			map[string][]string{"X-Forwarded-For": {"192.0.2.9, 198.51.100.1"}}, "198.51.100.1/32"},
		{"a chain of trusted proxies", ClientNetworks{TrustedProxies: proxy}, "127.0.0.1:4000",
			map[string][]string{"X-Forwarded-For": {"198.51.100.1, 10.2.2.2", "10.3.3.3"}}, "198.51.100.1/32"},
		{"forwarded", ClientNetworks{TrustedProxies: proxy}, "10.1.1.1:4000",
			map[string][]string{"Forwarded": {`for=192.0.2.60;proto=http, for="[2001:db8::1]:4711"`}}, "2001:db8::/64"},
		{"forwarded over x-forwarded-for", ClientNetworks{TrustedProxies: proxy}, "10.1.1.1:4000",
			map[string][]string{"Forwarded": {"for=192.0.2.60"}, "X-Forwarded-For": {"198.51.100.1"}}, "192.0.2.60/32"},
		{"a hop that does not parse counts the proxy", ClientNetworks{TrustedProxies: proxy, BoundLoopback: true}, "127.0.0.1:4000",
			map[string][]string{"Forwarded": {"for=unknown"}}, "127.0.0.1/32"},
		{"a trusted proxy with no header", ClientNetworks{TrustedProxies: proxy}, "10.1.1.1:4000", nil, "10.1.1.1/32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.remote, Header: tc.headers}
			got, bounded := tc.nets.requestKey(r)
			if tc.want == "" {
				if bounded {
					t.Fatalf("counted under %v, want unbounded", got)
				}
				return
			}
			if !bounded || got != netip.MustParsePrefix(tc.want) {
				t.Fatalf("counted under %v (bounded %v), want %s", got, bounded, tc.want)
			}
		})
	}
}

// FuzzClientOf feeds the proxy headers arbitrary values: nothing panics,
// and the client found is the proxy itself or an address that is not a
// trusted proxy.
func FuzzClientOf(f *testing.F) {
	f.Add("for=192.0.2.60;proto=http, for=\"[2001:db8::1]:4711\"", "198.51.100.1, 10.2.2.2")
	f.Add("for=unknown", "")
	f.Add("", "not an address,,  , 300.1.1.1")
	nets := ClientNetworks{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	f.Fuzz(func(t *testing.T, fwd, xff string) {
		r := &http.Request{RemoteAddr: "10.1.1.1:4000", Header: http.Header{}}
		if fwd != "" {
			r.Header.Set("Forwarded", fwd)
		}
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		got := nets.clientOf(r)
		if got != netip.MustParseAddr("10.1.1.1") && (!got.IsValid() || nets.trusted(got)) {
			t.Fatalf("client %v from Forwarded %q, X-Forwarded-For %q", got, fwd, xff)
		}
		nets.requestKey(r)
	})
}
