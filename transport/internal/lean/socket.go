//go:build !js

package lean

import (
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/pion/stun/v4"
	"golang.org/x/net/ipv4"

	"github.com/tongbu/tongbu/transport/internal/probe"
)

// socket is one UDP socket and its reader: the server's, one
// client's, or the clients' shared socket (see transport.ClientConfig.SharedSocket).
type socket struct {
	ep     *endpoint
	conn   *net.UDPConn
	raw    rawSocket
	server bool
	client *Peer // a client's own socket serves one peer
	shared bool  // many clients, each at its own local address

	mu      sync.RWMutex
	byAddr  map[netip.AddrPort]*Peer // where each peer is
	byCand  map[netip.AddrPort]*Peer // a new address a peer's checks came from, not yet proven
	ufrags  *ufragTable              // a server's: its shards share it
	byLocal map[netip.Addr]*Peer     // a shared socket's clients
	next    uint32                   // the shared socket's next local address

	stunMsg stun.Message // the reader's
	stunOut stun.Message
	pings   probe.Limit // a server's answers to probes (ping.go)
}

// newSocket serves udp: a server's socket, whose peers the server's
// ufrags finds, or a client's own (ufrags nil).
func newSocket(ep *endpoint, udp *net.UDPConn, ufrags *ufragTable) (*socket, error) {
	raw, err := newRawSocket(udp)
	if err != nil {
		return nil, err
	}
	server := ufrags != nil
	s := &socket{ep: ep, conn: udp, raw: raw, server: server, ufrags: ufrags,
		byAddr: map[netip.AddrPort]*Peer{}, byCand: map[netip.AddrPort]*Peer{}}
	if server {
		udp.SetReadBuffer(sockBuf)
		udp.SetWriteBuffer(sockBuf)
	}
	ep.wg.Add(1)
	go s.readLoop()
	return s, nil
}

// newSharedSocket serves the clients of a shared socket, each at its own
// local address (the control message IP_PKTINFO is on for udp).
func newSharedSocket(ep *endpoint, udp *net.UDPConn) (*socket, error) {
	raw, err := newRawSocket(udp)
	if err != nil {
		return nil, err
	}
	s := &socket{ep: ep, conn: udp, raw: raw, shared: true, byLocal: map[netip.Addr]*Peer{}}
	ep.wg.Add(1)
	go s.readLoop()
	return s, nil
}

// ufragTable finds a server's peers by their ICE username fragment:
// every shard's socket looks a binding request's up in it.
type ufragTable struct {
	mu sync.RWMutex
	m  map[string]*Peer
}

func (t *ufragTable) get(ufrag string) *Peer {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[ufrag]
}

func (t *ufragTable) put(ufrag string, p *Peer) {
	t.mu.Lock()
	t.m[ufrag] = p
	t.mu.Unlock()
}

func (t *ufragTable) forget(p *Peer, ufrag string) {
	t.mu.Lock()
	if t.m[ufrag] == p {
		delete(t.m, ufrag)
	}
	t.mu.Unlock()
}

func (t *ufragTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}

// peerKeys are what a socket's tables know a peer by, as the peer held
// them when it closed (read under its lock).
type peerKeys struct {
	local     netip.Addr
	ufrag     string
	rap, cand netip.AddrPort
}

// forget removes p, known by k, from the socket's tables.
func (s *socket) forget(p *Peer, k peerKeys) {
	s.mu.Lock()
	if k.local.IsValid() && s.byLocal[k.local] == p {
		delete(s.byLocal, k.local)
	}
	if s.byAddr[k.rap] == p {
		delete(s.byAddr, k.rap)
	}
	if s.byCand[k.cand] == p {
		delete(s.byCand, k.cand)
	}
	s.mu.Unlock()
	if s.ufrags != nil {
		s.ufrags.forget(p, k.ufrag)
	}
}

// rebind moves p from old, on the socket from, to ap, on s, and reports
// false, moving nothing, when another peer is at ap.
func (s *socket) rebind(p *Peer, from *socket, old, ap netip.AddrPort) bool {
	if s.shared {
		return true // its clients are found by their local address
	}
	s.mu.Lock()
	if q := s.byAddr[ap]; q != nil && q != p {
		s.mu.Unlock()
		s.ep.stats.checksRefused.Add(1)
		return false
	}
	if from == s && s.byAddr[old] == p {
		delete(s.byAddr, old)
	}
	if s.byCand[ap] == p {
		delete(s.byCand, ap)
	}
	s.byAddr[ap] = p
	s.mu.Unlock()
	if from != s && from != nil && old.IsValid() {
		from.unbind(p, old) // the peer's old address was another shard's
	}
	return true
}

// unbind forgets that p is at ap (it moved to a TCP path).
func (s *socket) unbind(p *Peer, ap netip.AddrPort) {
	s.mu.Lock()
	if s.byAddr[ap] == p {
		delete(s.byAddr, ap)
	}
	s.mu.Unlock()
}

// uncand forgets that ap is p's candidate path.
func (s *socket) uncand(p *Peer, ap netip.AddrPort) {
	s.mu.Lock()
	if s.byCand[ap] == p {
		delete(s.byCand, ap)
	}
	s.mu.Unlock()
}

// candidate makes ap p's candidate path in place of old, and reports
// false when another peer is at ap, or when over (p's checks from new
// addresses are over their rate) is set.
func (s *socket) candidate(p *Peer, old, ap netip.AddrPort, over bool) bool {
	if s.shared {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.byAddr[ap]; q != nil && q != p {
		s.ep.stats.checksRefused.Add(1)
		return false
	}
	if over {
		return false
	}
	if s.byCand[old] == p {
		delete(s.byCand, old)
	}
	s.byCand[ap] = p
	return true
}

func (s *socket) readLoop() {
	defer s.ep.wg.Done()
	// A client's own socket carries one peer's datagrams, a few a tick:
	// a smaller batch, for load generators that hold thousands of them.
	many := s.server || s.shared
	batch := readBatch
	if !many {
		batch = clientReadBatch
	}
	oob := 0
	if s.shared {
		oob = len(ipv4.NewControlMessage(ipv4.FlagDst))
	}
	r := newBatchReader(s.raw, batch, oob)
	// Packing a batch for recvmmsg costs for every message asked, not
	// only those that come: ask for twice what the last read brought, so
	// a read that fills its batch doubles the next, up to the batch.
	ask := batch
	held := time.Now()                  // since when this goroutine has run without waiting
	rd := reading{slabSize: clientSlab} // a datagram's messages for a Handler, and their bytes
	if many {
		rd.slabSize = serverSlab
	}
	for {
		asked := time.Now()
		n, err := r.read(ask)
		ask = min(max(2*n, 2), batch)
		now := time.Now()
		if now.Sub(asked) > readWaited {
			held = now // the read waited: the others ran meanwhile
		}
		if err != nil {
			if errClosed(err) {
				return
			}
			continue
		}
		began := now
		warm := s.server && !s.shared && n > 1
		if warm {
			s.lookAhead(r.in[:n], &rd)
		}
		for i := range r.in[:n] {
			if warm {
				warmAhead(rd.ahead, i, true)
			}
			d := &r.in[i]
			if len(d.b) == 0 {
				continue
			}
			var dst netip.Addr
			if s.shared {
				var ok bool
				if dst, ok = pktinfoDst(d.oob); !ok {
					continue
				}
			}
			s.take(now, d.b, d.from, dst, &rd)
			if s.server {
				// What each datagram cost, for DataPathStats: one clock
				// read a datagram.
				done := time.Now()
				s.ep.stats.datagram(done.Sub(began))
				began = done
			}
		}
		if warm {
			clear(rd.ahead) // a peer that closes is not kept by its last batch
		}
		// A burst of every peer's datagrams would keep the server's
		// reader reading for milliseconds, and a game loop whose time has
		// come would wait for it: let it run between batches, but not
		// after every one (the reader would then wait behind every
		// handshake's goroutines). A client's socket has one peer's
		// datagrams, and its reader waits after nearly every one.
		if t := time.Now(); many && t.Sub(held) > readHold {
			runtime.Gosched()
			held = t
		}
	}
}

// datagram routes one datagram by its first byte (RFC 7983): STUN to
// ICE, DTLS to the peer of its address; the rest is dropped. On a shared
// socket the peer is the one at dst, the datagram's local address, and
// the datagram must come from that peer's server.
func (s *socket) datagram(now time.Time, b []byte, from netip.AddrPort, dst netip.Addr) {
	rd := reading{slabSize: clientSlab}
	s.take(now, b, from, dst, &rd)
}

// take is datagram with the reader's state for the messages it hands
// over (reused from datagram to datagram).
func (s *socket) take(now time.Time, b []byte, from netip.AddrPort, dst netip.Addr, rd *reading) {
	ap := netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	var local *Peer
	if s.shared {
		s.mu.RLock()
		local = s.byLocal[dst]
		s.mu.RUnlock()
		if local == nil {
			return
		}
	}
	switch {
	case s.server && (probe.IsPing(b) || b[0] < 4 && probe.IsAnonymousBinding(b)):
		s.probe(now, b, ap)
	case b[0] < 4:
		s.stunPacket(b, ap, local)
	case b[0] >= 20 && b[0] <= 63:
		p := local
		if !s.shared {
			s.mu.RLock()
			if p = s.byAddr[ap]; p == nil {
				p = s.byCand[ap]
			}
			s.mu.RUnlock()
		}
		if p != nil && p.datagram(now, b, ap, rd) {
			rd.handOver(p)
		}
	}
}

// stunPacket answers an authenticated binding request (the server, ICE
// lite) or takes a binding response (a client). Anything else, and
// anything that fails its integrity check, is dropped without a trace.
// local is the client a shared socket's datagram is for.
func (s *socket) stunPacket(b []byte, ap netip.AddrPort, local *Peer) {
	m := &s.stunMsg
	m.Raw = append(m.Raw[:0], b...)
	if err := m.Decode(); err != nil {
		return
	}
	switch m.Type {
	case stun.BindingRequest:
		if s.server {
			s.bindingRequest(m, ap)
		}
	case stun.BindingSuccess:
		switch {
		case local != nil:
			local.bindingResponse(m, ap)
		case s.client != nil:
			s.client.bindingResponse(m, ap)
		}
	}
}

func (s *socket) bindingRequest(m *stun.Message, ap netip.AddrPort) {
	var user stun.Username
	if err := user.GetFrom(m); err != nil {
		return
	}
	local, remote, ok := strings.Cut(user.String(), ":")
	if !ok {
		return
	}
	p := s.ufrags.get(local)
	if p == nil || remote != p.remote.ufrag {
		return
	}
	if stun.Fingerprint.Check(m) != nil || stun.NewShortTermIntegrity(p.pwd).Check(m) != nil {
		return
	}
	// The first authenticated check binds the peer, before the answer
	// goes (the client starts DTLS as soon as it has it); see checked
	// for one from another address.
	if !p.checked(s, ap) {
		return
	}
	out := &s.stunOut
	out.Reset()
	err := out.Build(stun.NewTransactionIDSetter(m.TransactionID), stun.BindingSuccess,
		&stun.XORMappedAddress{IP: ap.Addr().AsSlice(), Port: int(ap.Port())},
		stun.NewShortTermIntegrity(p.pwd), stun.Fingerprint)
	if err != nil {
		return
	}
	s.conn.WriteToUDPAddrPort(out.Raw, ap)
}

// writeTo sends one datagram to ap now, from oob's source address when
// oob is set (a shared socket's client).
func (s *socket) writeTo(b []byte, ap netip.AddrPort, oob []byte) (int, error) {
	if oob != nil {
		n, _, err := s.conn.WriteMsgUDPAddrPort(b, oob, ap)
		return n, err
	}
	return s.conn.WriteToUDPAddrPort(b, ap)
}
