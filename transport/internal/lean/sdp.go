//go:build !js

package lean

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/pion/sdp/v3"
)

// remoteSession is what the lean stack takes from the other side's SDP.
type remoteSession struct {
	ufrag, pwd  string
	fingerprint []byte // SHA-256 of the peer's DTLS certificate
	setup       string // actpass, active or passive
	mid         string
	candidates  []netip.AddrPort // UDP candidates
	tcp         []netip.AddrPort // passive TCP candidates (RFC 6544)
}

var errSDP = errors.New("transport: bad session description")

// parseSession reads an offer or an answer: one application m-line over
// UDP/DTLS/SCTP, its ICE credentials, its SHA-256 fingerprint and setup
// role, and its UDP candidates.
func parseSession(text string) (remoteSession, error) {
	var d sdp.SessionDescription
	if err := d.UnmarshalString(text); err != nil {
		return remoteSession{}, fmt.Errorf("%w: %w", errSDP, err)
	}
	var rs remoteSession
	var media *sdp.MediaDescription
	for _, m := range d.MediaDescriptions {
		if m.MediaName.Media == "application" && m.MediaName.Port.Value != 0 {
			media = m
			break
		}
	}
	if media == nil {
		return rs, fmt.Errorf("%w: no application (data channel) section", errSDP)
	}
	attr := func(key string) string {
		if v, ok := media.Attribute(key); ok {
			return v
		}
		v, _ := d.Attribute(key)
		return v
	}
	rs.ufrag, rs.pwd, rs.setup = attr("ice-ufrag"), attr("ice-pwd"), attr("setup")
	rs.mid, _ = media.Attribute("mid")
	if rs.ufrag == "" || rs.pwd == "" || len(rs.ufrag) > 256 || len(rs.pwd) > 256 {
		return rs, fmt.Errorf("%w: ICE credentials missing or too long", errSDP)
	}
	fp := attr("fingerprint")
	alg, hexfp, _ := strings.Cut(fp, " ")
	if !strings.EqualFold(alg, "sha-256") {
		return rs, fmt.Errorf("%w: fingerprint %q, want sha-256", errSDP, alg)
	}
	raw, err := hex.DecodeString(strings.ReplaceAll(hexfp, ":", ""))
	if err != nil || len(raw) != sha256.Size {
		return rs, fmt.Errorf("%w: fingerprint %q", errSDP, hexfp)
	}
	rs.fingerprint = raw
	for _, a := range media.Attributes {
		if a.Key != "candidate" || len(rs.candidates) >= 16 {
			continue
		}
		// foundation component transport priority address port typ type
		f := strings.Fields(a.Value)
		if len(f) < 8 {
			continue
		}
		ip, err1 := netip.ParseAddr(f[4])
		port, err2 := strconv.ParseUint(f[5], 10, 16)
		if err1 != nil || err2 != nil || port == 0 {
			continue
		}
		ap := netip.AddrPortFrom(ip.Unmap(), uint16(port))
		switch {
		case strings.EqualFold(f[2], "udp"):
			rs.candidates = append(rs.candidates, ap)
		case strings.EqualFold(f[2], "tcp") && slices.Contains(f[8:], "passive"):
			rs.tcp = append(rs.tcp, ap)
		}
	}
	return rs, nil
}

// localSession is this side's part of an SDP.
type localSession struct {
	ufrag, pwd  string
	fingerprint []byte
	setup       string
	mid         string
	lite        bool
	candidates  []netip.AddrPort
	tcp         []netip.AddrPort // passive TCP candidates
	sessionID   uint64
}

// String renders the session as an SDP with one data-channel section.
func (ls localSession) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=- %d 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n", ls.sessionID)
	if ls.lite {
		b.WriteString("a=ice-lite\r\n")
	}
	fmt.Fprintf(&b, "a=group:BUNDLE %s\r\n", ls.mid)
	b.WriteString("m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\n")
	fmt.Fprintf(&b, "a=mid:%s\r\na=ice-ufrag:%s\r\na=ice-pwd:%s\r\n", ls.mid, ls.ufrag, ls.pwd)
	fp := strings.ToUpper(hex.EncodeToString(ls.fingerprint))
	b.WriteString("a=fingerprint:sha-256 ")
	for i := 0; i < len(fp); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(fp[i : i+2])
	}
	fmt.Fprintf(&b, "\r\na=setup:%s\r\na=sctp-port:5000\r\na=max-message-size:%d\r\n", ls.setup, 256<<10)
	for i, c := range ls.candidates {
		// Host candidates; the priority puts them in the order given.
		fmt.Fprintf(&b, "a=candidate:%d 1 udp %d %s %d typ host\r\n", i+1, 2130706431-i, c.Addr(), c.Port())
	}
	for i, c := range ls.tcp {
		// Below every UDP one: type 126 (host), local preference 40959
		// (direction passive, RFC 6544 4.2), as pion and browsers rank them.
		fmt.Fprintf(&b, "a=candidate:%d 1 tcp %d %s %d typ host tcptype passive\r\n", len(ls.candidates)+i+1, 2124414975-i, c.Addr(), c.Port())
	}
	b.WriteString("a=end-of-candidates\r\n")
	return b.String()
}
