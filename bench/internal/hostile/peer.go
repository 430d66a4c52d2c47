//go:build !js

// Package hostile is the attacker of bench abuse: a WebRTC peer written
// from the wire up (signaling, ICE, DTLS by pion/dtls, SCTP by hand) so
// that it can send what no real stack would, and the other attacks of
// issue 34 (slow offers with one ticket, idle keep-alives, forged source
// addresses). It speaks for itself only through the server's public
// surface: nothing of the library's internals.
package hostile

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/selfsign"
	"github.com/pion/sdp/v3"
	"github.com/pion/stun/v4"

	"github.com/tongbu/tongbu/engine"
)

// Peer is one hostile connection, past ICE, DTLS and SCTP's setup. Its
// reader acknowledges what the server sends and it sends a keepalive
// now and then, so the server keeps it; everything else it sends is the
// caller's.
type Peer struct {
	udp    *net.UDPConn
	server netip.AddrPort
	dc     *dtls.Conn
	// Its own ICE credentials, which its forged checks carry.
	User, Pwd string
	Local     netip.AddrPort // its socket's address

	mu      sync.Mutex
	myTag   uint32
	peerTag uint32
	tsn     uint32 // the next TSN it sends
	cumIn   uint32 // the highest TSN received from the server
	ssn     uint16 // stream 1's next SSN
	closed  chan struct{}
	once    sync.Once
}

// Dial connects to the engine server at base (its /connect) with ticket.
func Dial(ctx context.Context, base, ticket string) (*Peer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cert, err := selfsign.SelfSign(key)
	if err != nil {
		return nil, err
	}
	fp := sha256.Sum256(cert.Certificate[0])
	ufrag, pwd := token(8), token(24)
	offer := sessionText(ufrag, pwd, fp[:])
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/connect", strings.NewReader(offer))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/sdp")
	req.Header.Set("Authorization", "Bearer "+ticket)
	req.Header.Set(engine.WireHeader, strconv.Itoa(engine.WireVersion))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("hostile: signaling %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	ans, err := parseAnswer(string(body))
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	p := &Peer{udp: udp, server: ans.cand, User: ans.ufrag + ":" + ufrag, Pwd: ans.pwd,
		Local: udp.LocalAddr().(*net.UDPAddr).AddrPort(), closed: make(chan struct{})}
	if err := p.ice(ctx, ufrag); err != nil {
		udp.Close()
		return nil, err
	}
	cfg := &dtls.Config{
		Certificates:           []tls.Certificate{cert},
		CipherSuites:           []dtls.CipherSuiteID{dtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		InsecureSkipVerify:     true,
		ExtendedMasterSecret:   dtls.RequireExtendedMasterSecret,
		SRTPProtectionProfiles: []dtls.SRTPProtectionProfile{dtls.SRTP_AEAD_AES_128_GCM},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("hostile: no certificate")
			}
			if sum := sha256.Sum256(raw[0]); !bytes.Equal(sum[:], ans.fp) {
				return errors.New("hostile: certificate is not the answer's")
			}
			return nil
		},
	}
	dc, err := dtls.Client(dtlsPath{udp, p.server}, net.UDPAddrFromAddrPort(p.server), cfg)
	if err == nil {
		err = dc.HandshakeContext(ctx)
	}
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("hostile: DTLS: %w", err)
	}
	p.dc = dc
	if err := p.associate(ctx); err != nil {
		p.Close()
		return nil, err
	}
	go p.read()
	go p.keepalive()
	return p, nil
}

// Close ends the peer's connection.
func (p *Peer) Close() {
	p.once.Do(func() {
		close(p.closed)
		p.dc.Close()
		p.udp.Close()
	})
}

// Server returns the server's UDP address.
func (p *Peer) Server() netip.AddrPort { return p.server }

func token(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// sessionText is the offer: one data-channel section.
func sessionText(ufrag, pwd string, fp []byte) string {
	hexfp := strings.ToUpper(hex.EncodeToString(fp))
	var parts []string
	for i := 0; i < len(hexfp); i += 2 {
		parts = append(parts, hexfp[i:i+2])
	}
	return "v=0\r\no=- 1 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n" +
		"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n" +
		"a=ice-ufrag:" + ufrag + "\r\na=ice-pwd:" + pwd + "\r\na=fingerprint:sha-256 " + strings.Join(parts, ":") +
		"\r\na=setup:actpass\r\na=sctp-port:5000\r\n"
}

type answer struct {
	ufrag, pwd string
	fp         []byte
	cand       netip.AddrPort
}

func parseAnswer(text string) (answer, error) {
	var d sdp.SessionDescription
	if err := d.UnmarshalString(text); err != nil {
		return answer{}, fmt.Errorf("hostile: answer: %w", err)
	}
	var a answer
	for _, m := range d.MediaDescriptions {
		for _, at := range m.Attributes {
			switch at.Key {
			case "ice-ufrag":
				a.ufrag = at.Value
			case "ice-pwd":
				a.pwd = at.Value
			case "fingerprint":
				_, h, _ := strings.Cut(at.Value, " ")
				a.fp, _ = hex.DecodeString(strings.ReplaceAll(h, ":", ""))
			case "candidate":
				f := strings.Fields(at.Value)
				if len(f) < 6 || a.cand.IsValid() {
					continue
				}
				ip, err1 := netip.ParseAddr(f[4])
				port, err2 := strconv.ParseUint(f[5], 10, 16)
				if err1 == nil && err2 == nil && ip.Is4() {
					a.cand = netip.AddrPortFrom(ip, uint16(port))
				}
			}
		}
	}
	if a.ufrag == "" || a.pwd == "" || len(a.fp) != 32 || !a.cand.IsValid() {
		return a, fmt.Errorf("hostile: answer lacks credentials, fingerprint or an IPv4 candidate")
	}
	return a, nil
}

// Check returns an ICE binding request with the peer's own credentials,
// as the server checks them: what a forged check carries.
func (p *Peer) Check() []byte {
	var tie [8]byte
	rand.Read(tie[:])
	m := stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.NewUsername(p.User),
		stun.RawAttribute{Type: stun.AttrICEControlling, Value: tie[:]},
		stun.RawAttribute{Type: stun.AttrPriority, Value: binary.BigEndian.AppendUint32(nil, 1853824767)},
		stun.RawAttribute{Type: stun.AttrUseCandidate},
		stun.NewShortTermIntegrity(p.Pwd), stun.Fingerprint)
	return m.Raw
}

// ice sends checks until one is answered.
func (p *Peer) ice(ctx context.Context, ufrag string) error {
	check := p.Check()
	buf := make([]byte, 1500)
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil || try > 50 {
			return fmt.Errorf("hostile: no answer to ICE checks")
		}
		p.udp.WriteToUDPAddrPort(check, p.server)
		p.udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, from, err := p.udp.ReadFromUDPAddrPort(buf)
		if err != nil || from != p.server || n == 0 || buf[0] > 3 {
			continue
		}
		var m stun.Message
		m.Raw = buf[:n]
		if m.Decode() == nil && m.Type == stun.BindingSuccess {
			p.udp.SetReadDeadline(time.Time{})
			return nil
		}
	}
}

// dtlsPath is the socket as pion/dtls sees it: the server's datagrams
// only.
type dtlsPath struct {
	*net.UDPConn
	server netip.AddrPort
}

func (d dtlsPath) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, from, err := d.UDPConn.ReadFromUDPAddrPort(b)
		if err != nil {
			return 0, nil, err
		}
		if from == d.server && n > 0 && b[0] >= 20 && b[0] <= 63 {
			return n, net.UDPAddrFromAddrPort(from), nil
		}
	}
}

// SCTP, by hand: what the peer needs to set up and keep its association,
// and the packets its attacks send.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Packet returns an SCTP packet to the server of the chunks, with a
// CRC32c.
func (p *Peer) Packet(chunks ...[]byte) []byte {
	p.mu.Lock()
	tag := p.peerTag
	p.mu.Unlock()
	return packet(tag, chunks...)
}

func packet(tag uint32, chunks ...[]byte) []byte {
	b := make([]byte, 12, 1200)
	binary.BigEndian.PutUint16(b, 5000)
	binary.BigEndian.PutUint16(b[2:], 5000)
	binary.BigEndian.PutUint32(b[4:], tag)
	for _, c := range chunks {
		b = append(b, c...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b, castagnoli))
	return b
}

func chunk(typ, flags uint8, value []byte) []byte {
	c := []byte{typ, flags, 0, 0}
	binary.BigEndian.PutUint16(c[2:], uint16(4+len(value)))
	return append(c, value...)
}

// Data returns a DATA chunk of payload at the peer's next TSN; flags: 4
// unordered, 2 first fragment, 1 last.
func (p *Peer) Data(flags uint8, stream uint16, ppid uint32, payload []byte) []byte {
	p.mu.Lock()
	tsn := p.tsn
	p.tsn++
	ssn := uint16(0)
	if flags&4 == 0 && stream == 1 && flags&1 != 0 {
		ssn = p.ssn
		p.ssn++
	}
	p.mu.Unlock()
	v := binary.BigEndian.AppendUint32(nil, tsn)
	v = binary.BigEndian.AppendUint16(v, stream)
	v = binary.BigEndian.AppendUint16(v, ssn)
	v = binary.BigEndian.AppendUint32(v, ppid)
	return chunk(0, flags, append(v, payload...))
}

// Forward returns a FORWARD-TSN over every TSN the peer has sent.
func (p *Peer) Forward() []byte {
	p.mu.Lock()
	cum := p.tsn - 1
	p.mu.Unlock()
	return chunk(192, 0, binary.BigEndian.AppendUint32(nil, cum))
}

// Send sends an SCTP packet in a DTLS record.
func (p *Peer) Send(pkt []byte) error {
	_, err := p.dc.Write(pkt)
	return err
}

func (p *Peer) associate(ctx context.Context) error {
	var tagb, tsnb [4]byte
	rand.Read(tagb[:])
	rand.Read(tsnb[:])
	p.myTag = binary.BigEndian.Uint32(tagb[:]) | 1
	p.tsn = binary.BigEndian.Uint32(tsnb[:])
	v := binary.BigEndian.AppendUint32(nil, p.myTag)
	v = binary.BigEndian.AppendUint32(v, 1<<20) // a_rwnd
	v = binary.BigEndian.AppendUint16(v, 16)
	v = binary.BigEndian.AppendUint16(v, 16)
	v = binary.BigEndian.AppendUint32(v, p.tsn)
	v = append(v, 0xC0, 0x00, 0, 4)                           // FORWARD-TSN supported
	v = append(v, 0x80, 0x08, 0, 6, 0xC0, 0x82, 0, 0)         // supported extensions
	v = append(v, 0x80, 0x01, 0, 8, 0, 0, 0, 1)               // zero checksum acceptable (DTLS)
	if err := p.Send(packet(0, chunk(1, 0, v))); err != nil { // INIT
		return err
	}
	buf := make([]byte, 2048)
	p.dc.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer p.dc.SetReadDeadline(time.Time{})
	for {
		n, err := p.dc.Read(buf)
		if err != nil {
			return fmt.Errorf("hostile: SCTP setup: %w", err)
		}
		for c := range chunks(buf[:n]) {
			switch c[0] {
			case 2: // INIT-ACK
				val := c[4:]
				if len(val) < 16 {
					return errors.New("hostile: short INIT-ACK")
				}
				p.peerTag = binary.BigEndian.Uint32(val)
				p.cumIn = binary.BigEndian.Uint32(val[12:]) - 1
				var cookie []byte
				for q := val[16:]; len(q) >= 4; {
					typ, l := binary.BigEndian.Uint16(q), int(binary.BigEndian.Uint16(q[2:]))
					if l < 4 || l > len(q) {
						break
					}
					if typ == 7 {
						cookie = q[4:l]
					}
					q = q[min((l+3)&^3, len(q)):]
				}
				if err := p.Send(packet(p.peerTag, chunk(10, 0, cookie))); err != nil {
					return err
				}
			case 11: // COOKIE-ACK
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// chunks yields the chunks of an SCTP packet.
func chunks(pkt []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for b := pkt[min(12, len(pkt)):]; len(b) >= 4; {
			n := int(binary.BigEndian.Uint16(b[2:]))
			if n < 4 || n > len(b) {
				return
			}
			if !yield(b[:n]) {
				return
			}
			b = b[min((n+3)&^3, len(b)):]
		}
	}
}

// read acknowledges the server's DATA (claiming all up to the highest
// TSN seen: a hostile peer need not be exact) so the server keeps it.
func (p *Peer) read() {
	buf := make([]byte, 2048)
	for {
		n, err := p.dc.Read(buf)
		if err != nil {
			return
		}
		got := false
		for c := range chunks(buf[:n]) {
			if c[0] == 0 && len(c) >= 8 {
				tsn := binary.BigEndian.Uint32(c[4:])
				p.mu.Lock()
				if int32(tsn-p.cumIn) > 0 {
					p.cumIn = tsn
				}
				p.mu.Unlock()
				got = true
			}
		}
		if got {
			p.sack()
		}
	}
}

func (p *Peer) sack() {
	p.mu.Lock()
	v := binary.BigEndian.AppendUint32(nil, p.cumIn)
	p.mu.Unlock()
	v = binary.BigEndian.AppendUint32(v, 1<<20)
	v = append(v, 0, 0, 0, 0)
	p.Send(p.Packet(chunk(3, 0, v)))
}

// keepalive sends WebRTC's empty message on the reliable channel every
// two seconds, so the server does not close the peer for silence.
func (p *Peer) keepalive() {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.closed:
			return
		case <-t.C:
		}
		p.Send(p.Packet(p.Data(3, 1, 57, []byte{0})))
	}
}
