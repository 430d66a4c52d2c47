//go:build !js

package engine

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
)

// ping answers GET /ping at once: a round trip over TCP for a client that
// cannot send UDP (a browser), and where the UDP port that answers region
// pings is (MeasureRegions, SPEC.md §9.8), in the PingUDPHeader: an
// address, or ":port" for the host the client reached. Any page may ask:
// it learns nothing a client would not.
func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", PingUDPHeader)
	if a := s.pingUDP(); a != "" {
		h.Set(PingUDPHeader, a)
	}
	w.WriteHeader(http.StatusNoContent)
}

// pingUDP returns where this server's UDP port is: the first advertised
// address, else the socket's own address, else (a socket on every
// interface) ":port"; "" without WebRTC.
func (s *Server) pingUDP() string {
	u, ok := s.UDPAddr().(*net.UDPAddr)
	if !ok || u == nil {
		return ""
	}
	port := uint16(u.Port)
	for _, ip := range s.cfg.PublicIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			return netip.AddrPortFrom(a, port).String()
		}
	}
	if a, ok := netip.AddrFromSlice(u.IP); ok && !a.Unmap().IsUnspecified() {
		return netip.AddrPortFrom(a.Unmap(), port).String()
	}
	return ":" + strconv.Itoa(int(port))
}
