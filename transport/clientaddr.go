//go:build !js

package transport

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientNetworks says how the per-client bounds (ServerConfig's
// MaxPendingPerAddr, a Listener's PerNetwork) find a client's address and
// which addresses they count as one client. The zero value counts each
// IPv4 address and each IPv6 /64 as one client, trusts no proxy, and
// leaves loopback addresses unbounded.
type ClientNetworks struct {
	// IPv4Prefix and IPv6Prefix are how many leading bits of an address
	// name one client (defaults 32 and 64). An IPv6 host is given a whole
	// /64, so counting its addresses one by one would bound nothing; an
	// operator whose players share carrier-grade NAT addresses may count
	// IPv4 by a shorter prefix and raise the bounds.
	IPv4Prefix, IPv6Prefix int
	// TrustedProxies are the networks of the reverse proxies in front of
	// the server. A request from one of them is counted against the
	// client the proxy names: the last address of its Forwarded (for=)
	// or X-Forwarded-For header that is not itself a trusted proxy. The
	// proxies' own connections are not bounded per address. List a proxy
	// on the same host here ("127.0.0.1/32"): otherwise every player
	// looks like the proxy, and loopback is unbounded.
	TrustedProxies []netip.Prefix
	// BoundLoopback bounds loopback addresses as any other. By default
	// they are unbounded: local bots, tests, tools.
	BoundLoopback bool
}

// key returns the network a client address is counted under, and false
// when it is not bounded.
func (n ClientNetworks) key(a netip.Addr) (netip.Prefix, bool) {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() && !n.BoundLoopback {
		return netip.Prefix{}, false
	}
	bits := n.IPv4Prefix
	if bits <= 0 || bits > 32 {
		bits = 32
	}
	if a.Is6() {
		if bits = n.IPv6Prefix; bits <= 0 || bits > 128 {
			bits = 64
		}
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return netip.Prefix{}, false
	}
	return p, true
}

func (n ClientNetworks) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range n.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// connKey returns the network a connection from remote is counted under,
// and false when it is not bounded (a trusted proxy's, or loopback's).
func (n ClientNetworks) connKey(remote net.Addr) (netip.Prefix, bool) {
	a := addrOf(remote.String())
	if n.trusted(a) {
		return netip.Prefix{}, false
	}
	return n.key(a)
}

// requestKey returns the network a request's client is counted under,
// and false when it is not bounded: through a trusted proxy, the client
// it names.
func (n ClientNetworks) requestKey(r *http.Request) (netip.Prefix, bool) {
	return n.key(n.clientOf(r))
}

// clientOf returns the address of the client behind a request: its peer,
// or the client a trusted proxy names.
func (n ClientNetworks) clientOf(r *http.Request) netip.Addr {
	peer := addrOf(r.RemoteAddr)
	if !n.trusted(peer) {
		return peer
	}
	hops := forwardedFor(r.Header.Values("Forwarded"))
	if len(hops) == 0 {
		for _, v := range r.Header.Values("X-Forwarded-For") {
			for h := range strings.SplitSeq(v, ",") {
				hops = append(hops, addrOf(strings.TrimSpace(h)))
			}
		}
	}
	// The last hop a trusted proxy did not add is the client: what comes
	// before it, the client could have written itself.
	for i := len(hops) - 1; i >= 0; i-- {
		if !hops[i].IsValid() {
			return peer // a hop that does not parse: count the proxy
		}
		if !n.trusted(hops[i]) {
			return hops[i]
		}
	}
	return peer
}

// forwardedFor returns the for= addresses of Forwarded headers (RFC
// 7239), in order.
func forwardedFor(values []string) []netip.Addr {
	var out []netip.Addr
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			for pair := range strings.SplitSeq(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					out = append(out, addrOf(strings.Trim(val, `"`)))
				}
			}
		}
	}
	return out
}

// addrOf parses an address as "ip", "ip:port", "[ipv6]" or "[ipv6]:port";
// the zero Addr when it does not parse ("unknown", an obfuscated name).
func addrOf(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}
