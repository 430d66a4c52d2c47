package sctp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"
)

type msg struct {
	stream uint16
	ppid   uint32
	data   string
}

// endpoint is one side of a simulated link.
type endpoint struct {
	a   *Assoc
	got []msg
}

type inflight struct {
	at  time.Time
	pkt []byte
	to  int
}

// sim runs two associations over a lossy, delayed link on a simulated
// clock.
type sim struct {
	t      *testing.T
	now    time.Time
	ep     [2]*endpoint
	rng    *rand.Rand
	loss   float64
	delay  time.Duration
	wire   []inflight
	sent   [2]int // packets each side sent
	tap    func(from int, pkt []byte) []byte
	errors [2][]error
}

func newSim(t *testing.T, seed uint64, loss float64, delay time.Duration) *sim {
	s := &sim{t: t, now: time.Unix(1000, 0), rng: rand.New(rand.NewPCG(seed, 1)), loss: loss, delay: delay}
	for i := range s.ep {
		ep := &endpoint{}
		ep.a = New(Config{Client: i == 0}, s.now)
		s.ep[i] = ep
	}
	return s
}

// step advances the clock by d: packets due are delivered, then both
// sides flush.
func (s *sim) step(d time.Duration) {
	s.now = s.now.Add(d)
	var keep []inflight
	for _, p := range s.wire {
		if p.at.After(s.now) {
			keep = append(keep, p)
			continue
		}
		ep := s.ep[p.to]
		if err := ep.a.Handle(s.now, p.pkt); err != nil {
			s.errors[p.to] = append(s.errors[p.to], err)
		}
		for _, m := range ep.a.Messages(nil) {
			ep.got = append(ep.got, msg{m.Stream, m.PPID, string(m.Data)})
		}
	}
	s.wire = keep
	for i, ep := range s.ep {
		ep.a.Flush(s.now, func(pkt []byte) {
			s.sent[i]++
			if s.tap != nil {
				if pkt = s.tap(i, pkt); pkt == nil {
					return
				}
			}
			if s.rng.Float64() < s.loss {
				return
			}
			s.wire = append(s.wire, inflight{at: s.now.Add(s.delay), pkt: bytes.Clone(pkt), to: 1 - i})
		})
	}
}

func (s *sim) run(d, tick time.Duration) {
	for end := s.now.Add(d); s.now.Before(end); {
		s.step(tick)
	}
}

func (s *sim) connect() {
	s.t.Helper()
	for i := 0; i < 500 && !(s.ep[0].a.Established() && s.ep[1].a.Established()); i++ {
		s.step(10 * time.Millisecond)
	}
	if !s.ep[0].a.Established() || !s.ep[1].a.Established() {
		s.t.Fatalf("not established: client %v server %v", s.ep[0].a.st, s.ep[1].a.st)
	}
}

func TestHandshakeAndEcho(t *testing.T) {
	s := newSim(t, 1, 0, 5*time.Millisecond)
	s.connect()
	c, srv := s.ep[0], s.ep[1]
	if err := c.a.SendUnordered(0, PPIDBinary, []byte("u1")); err != nil {
		t.Fatal(err)
	}
	if err := c.a.SendOrdered(1, PPIDBinary, []byte("r1")); err != nil {
		t.Fatal(err)
	}
	srv.a.SendOrdered(1, PPIDString, []byte("back"))
	s.run(200*time.Millisecond, 10*time.Millisecond)
	want := []msg{{0, PPIDBinary, "u1"}, {1, PPIDBinary, "r1"}}
	if fmt.Sprint(srv.got) != fmt.Sprint(want) {
		t.Errorf("server got %v, want %v", srv.got, want)
	}
	if fmt.Sprint(c.got) != fmt.Sprint([]msg{{1, PPIDString, "back"}}) {
		t.Errorf("client got %v", c.got)
	}
	for i, errs := range s.errors {
		if len(errs) > 0 {
			t.Errorf("side %d: %v", i, errs)
		}
	}
	if srv.a.Stats().Out != 0 || c.a.Stats().Out != 0 {
		t.Errorf("outstanding after a quiet spell: %d %d", c.a.Stats().Out, srv.a.Stats().Out)
	}
}

// TestLossyLink sends a frame every tick both ways, unreliable, and
// reliable messages now and then, over 20% loss: every reliable message
// arrives in order, about 80% of the unreliable ones arrive, none twice,
// and nothing piles up (FORWARD-TSN keeps the receivers' TSN sets small).
func TestLossyLink(t *testing.T) {
	for _, tc := range []struct {
		name  string
		loss  float64
		delay time.Duration
	}{
		{"clean", 0, 20 * time.Millisecond},
		{"loss20", 0.2, 50 * time.Millisecond},
		{"loss40", 0.4, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 7, tc.loss, tc.delay)
			s.loss = 0
			s.connect()
			s.loss = tc.loss
			const frames = 3000
			var relSent [2][]string
			for f := range frames {
				for i, ep := range s.ep {
					frame := fmt.Sprintf("u%d-%d", i, f)
					if err := ep.a.SendUnordered(0, PPIDBinary, []byte(frame)); err != nil {
						t.Fatal(err)
					}
					if f%10 == 0 {
						r := fmt.Sprintf("r%d-%d-%s", i, f, bytes.Repeat([]byte("x"), f%3000))
						relSent[i] = append(relSent[i], r)
						if err := ep.a.SendOrdered(1, PPIDBinary, []byte(r)); err != nil {
							t.Fatal(err)
						}
					}
				}
				s.step(16 * time.Millisecond)
				for i, ep := range s.ep {
					if c, err := ep.a.Closed(); c {
						t.Fatalf("frame %d: side %d closed: %v", f, i, err)
					}
				}
			}
			// Long enough for the last SACKs: through 40% loss a retransmission
			// and its SACK both arrive a third of the time, every 3 s at most.
			s.run(60*time.Second, 16*time.Millisecond)
			for i, ep := range s.ep {
				var rel []string
				unrel := map[string]int{}
				for _, m := range ep.got {
					if m.stream == 1 {
						rel = append(rel, m.data)
					} else {
						unrel[m.data]++
					}
				}
				sent := relSent[1-i]
				if len(rel) != len(sent) {
					t.Fatalf("side %d: %d reliable messages, want %d", i, len(rel), len(sent))
				}
				for k := range rel {
					if rel[k] != sent[k] {
						t.Fatalf("side %d: reliable message %d out of order", i, k)
					}
				}
				for m, n := range unrel {
					if n != 1 {
						t.Fatalf("side %d: %s delivered %d times", i, m, n)
					}
				}
				got := float64(len(unrel)) / frames
				// Each frame goes in one packet with loss p: about 1-p arrive.
				if want := 1 - tc.loss; got < want-0.05 || got > want+0.05 {
					t.Errorf("side %d: %.3f of unreliable frames arrived, want about %.2f", i, got, want)
				}
				if n := ep.a.recv.n; n > 64 {
					t.Errorf("side %d holds %d TSNs above its cumulative ack", i, n)
				}
				if st := ep.a.Stats(); st.Out > 0 {
					for _, oc := range ep.a.out[ep.a.outHead:] {
						t.Logf("tsn %d rel %v acked %v ab %v rtx %v sends %d", oc.tsn, oc.reliable, oc.acked, oc.abandoned, oc.rtx, oc.sends)
					}
					t.Logf("cumAck %d advAck %d fwdAt %v t3 %v flight %d; peer cum %d", ep.a.cumAck, ep.a.advAck, ep.a.fwdAt, ep.a.t3, ep.a.flight, s.ep[1-i].a.recv.cum)
					t.Errorf("side %d: %d chunks outstanding at the end", i, st.Out)
				}
				for _, err := range s.errors[i] {
					t.Errorf("side %d: %v", i, err)
				}
			}
			// One packet each way per frame: the SACK rides with the DATA.
			if per := float64(s.sent[1]) / frames; tc.loss == 0 && per > 1.2 {
				t.Errorf("server sent %.2f packets per frame", per)
			}
			t.Logf("packets per frame %.2f/%.2f, abandoned %d/%d, retransmits %d/%d",
				float64(s.sent[0])/frames, float64(s.sent[1])/frames,
				s.ep[0].a.stats.Abandoned, s.ep[1].a.stats.Abandoned,
				s.ep[0].a.stats.Retransmits, s.ep[1].a.stats.Retransmits)
		})
	}
}

func TestFragmentation(t *testing.T) {
	s := newSim(t, 3, 0.1, 10*time.Millisecond)
	s.loss = 0
	s.connect()
	s.loss = 0.1
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	small := bytes.Repeat([]byte("u"), 3000)              // unreliable, 3 chunks
	s.ep[0].a.SendOrdered(1, PPIDBinary, big)
	for range 50 {
		s.ep[0].a.SendUnordered(0, PPIDBinary, small)
		s.step(10 * time.Millisecond)
	}
	s.run(10*time.Second, 10*time.Millisecond)
	var gotBig, gotSmall int
	for _, m := range s.ep[1].got {
		switch {
		case m.stream == 1 && m.data == string(big):
			gotBig++
		case m.stream == 0 && m.data == string(small):
			gotSmall++
		default:
			t.Fatalf("a message of %d bytes on stream %d that was not sent", len(m.data), m.stream)
		}
	}
	if gotBig != 1 || gotSmall < 25 {
		t.Errorf("got %d big, %d small of 50", gotBig, gotSmall)
	}
	if h := s.ep[1].a.held; h.charged != 0 || h.n != 0 {
		t.Errorf("reassembly holds %d bytes in %d chunks", h.charged, h.n)
	}
}

// established returns a server association that has taken a client's
// handshake, and the client.
func established(t testing.TB) (*sim, *Assoc) {
	s := newSim(&testing.T{}, 1, 0, time.Millisecond)
	for i := 0; i < 100 && !(s.ep[0].a.Established() && s.ep[1].a.Established()); i++ {
		s.step(5 * time.Millisecond)
	}
	if !s.ep[1].a.Established() {
		t.Fatal("not established")
	}
	return s, s.ep[1].a
}

// packet builds a packet to the server with the given chunks.
func packet(tag uint32, chunks ...[]byte) []byte {
	var b builder
	b.mtu = 1 << 16
	b.start(DefaultPort, DefaultPort, tag)
	for _, c := range chunks {
		b.raw(c)
	}
	return bytes.Clone(b.finish(false))
}

func dataChunkBytes(flags uint8, tsn uint32, stream, ssn uint16, payload []byte) []byte {
	v := binary.BigEndian.AppendUint32(nil, tsn)
	v = binary.BigEndian.AppendUint16(v, stream)
	v = binary.BigEndian.AppendUint16(v, ssn)
	v = binary.BigEndian.AppendUint32(v, PPIDBinary)
	return encodeChunk(ctData, flags, append(v, payload...))
}

func sackBytes(cum, rwnd uint32, gaps ...uint16) []byte {
	v := binary.BigEndian.AppendUint32(nil, cum)
	v = binary.BigEndian.AppendUint32(v, rwnd)
	v = binary.BigEndian.AppendUint16(v, uint16(len(gaps)/2))
	v = binary.BigEndian.AppendUint16(v, 0)
	for _, g := range gaps {
		v = binary.BigEndian.AppendUint16(v, g)
	}
	return encodeChunk(ctSack, 0, v)
}

// TestHostile feeds a server association what a hostile peer would send:
// each is dropped or ends the association, and nothing it sends makes the
// association hold more than its bounds.
func TestHostile(t *testing.T) {
	now := time.Unix(2000, 0)
	for _, tc := range []struct {
		name   string
		pkts   func(a *Assoc) [][]byte
		closed bool
		err    error
	}{
		{"wrong tag", func(a *Assoc) [][]byte {
			return [][]byte{packet(a.myTag+1, dataChunkBytes(3, a.recv.cum+1, 0, 0, []byte("x")))}
		}, false, nil},
		{"bad checksum", func(a *Assoc) [][]byte {
			p := packet(a.myTag, dataChunkBytes(3, a.recv.cum+1, 0, 0, []byte("x")))
			p[8] ^= 1
			return [][]byte{p}
		}, false, ErrChecksum},
		{"sack of unsent", func(a *Assoc) [][]byte {
			return [][]byte{packet(a.myTag, sackBytes(a.nextTSN+5, 1<<16))}
		}, true, ErrProtocol},
		{"sack gap past sent", func(a *Assoc) [][]byte {
			return [][]byte{packet(a.myTag, sackBytes(a.cumAck, 1<<16, 2, 100))}
		}, true, ErrProtocol},
		{"tsn far ahead", func(a *Assoc) [][]byte {
			return [][]byte{packet(a.myTag, dataChunkBytes(3, a.recv.cum+maxTSNWindow+10, 0, 0, []byte("x")))}
		}, false, nil},
		{"window overrun", func(a *Assoc) [][]byte {
			var ps [][]byte
			// Whole messages that wait for an earlier one, past the
			// window: those over it are dropped, unacknowledged.
			for i := range uint32(300) {
				ps = append(ps, packet(a.myTag, dataChunkBytes(flagBegin|flagEnd, a.recv.cum+2+i, 1, uint16(1+i), make([]byte, 1000))))
			}
			return ps
		}, false, nil},
		{"message over the limit", func(a *Assoc) [][]byte {
			var ps [][]byte
			for i := range uint32(70) {
				ps = append(ps, packet(a.myTag, dataChunkBytes(flagBegin*boolU8(i == 0), a.recv.cum+1+i, 1, 0, make([]byte, 1000))))
			}
			return ps
		}, true, ErrProtocol},
		{"bad cookie", func(a *Assoc) [][]byte {
			return [][]byte{packet(a.myTag, encodeChunk(ctCookieEcho, 0, make([]byte, cookieLen)))}
		}, false, ErrProtocol},
		{"forward tsn far", func(a *Assoc) [][]byte {
			return [][]byte{packet(a.myTag, encodeChunk(ctForwardTSN, 0, binary.BigEndian.AppendUint32(nil, a.recv.cum+1<<20)))}
		}, false, ErrProtocol},
		{"truncated chunk", func(a *Assoc) [][]byte {
			p := packet(a.myTag, dataChunkBytes(3, a.recv.cum+1, 0, 0, []byte("xyz")))
			binary.BigEndian.PutUint16(p[14:], 400)
			binary.LittleEndian.PutUint32(p[8:], checksum(p))
			return [][]byte{p}
		}, false, ErrMalformed},
		{"empty data", func(a *Assoc) [][]byte {
			return [][]byte{packet(a.myTag, dataChunkBytes(3, a.recv.cum+1, 0, 0, nil))}
		}, false, ErrProtocol},
		{"abort", func(a *Assoc) [][]byte {
			return [][]byte{packet(a.myTag, encodeChunk(ctAbort, 0, nil))}
		}, true, ErrAborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, a := established(t)
			a.SendOrdered(1, PPIDBinary, []byte("hello"))
			a.Flush(now, func([]byte) {})
			var last error
			for _, p := range tc.pkts(a) {
				if err := a.Handle(now, p); err != nil && last == nil {
					last = err
				}
			}
			if closed, _ := a.Closed(); closed != tc.closed {
				t.Errorf("closed %v, want %v (last error %v)", closed, tc.closed, last)
			}
			if tc.err != nil && !errors.Is(last, tc.err) {
				t.Errorf("error %v, want %v", last, tc.err)
			}
			if tc.err == nil && last != nil {
				t.Errorf("error %v, want none", last)
			}
			checkBounds(t, a)
		})
	}
}

// checkBounds fails t when a holds more than its bounds allow, or when
// what it counts of its reassembly buffer is not what the buffer holds.
func checkBounds(t testing.TB, a *Assoc) {
	t.Helper()
	h := &a.held
	if h.n > maxHeld+heldReserve || h.charged > int(a.cfg.RecvWindow)*3/2 {
		t.Fatalf("holds %d chunks, %d bytes charged", h.n, h.charged)
	}
	inTable := 0
	for _, sl := range h.at.slots {
		if sl.idx != 0 {
			inTable++
		}
	}
	if inTable != h.n || len(h.ready) > h.n {
		t.Fatalf("holds %d chunks by TSN, %d ready, counts %d", inTable, len(h.ready), h.n)
	}
	charged := 0
	for i := range h.slab {
		if !h.slab[i].used {
			continue
		}
		tsn := h.slab[i].tsn
		if j, ok, _ := h.at.get(tsn); !ok || int(j) != i {
			t.Fatalf("TSN %d finds slot %d, %v; it is in %d", tsn, j, ok, i)
		}
		// At or below the cumulative TSN only the first fragments of a
		// message that goes on above it.
		if !tsnLess(a.recv.cum-maxHeld-heldReserve, tsn) || tsnLess(a.recv.cum, tsn) && tsn-a.recv.cum > maxTSNWindow {
			t.Fatalf("holds TSN %d, cumulative %d", tsn, a.recv.cum)
		}
		charged += len(h.slab[i].data) + chunkOverhead
	}
	if len(h.slab)-len(h.free) != h.n {
		t.Fatalf("%d slab slots, %d free, %d held", len(h.slab), len(h.free), h.n)
	}
	if charged != h.charged {
		t.Fatalf("charged %d, holds %d", h.charged, charged)
	}
	if a.recv.n > maxTSNWindow || len(a.out)-a.outHead > maxOutstanding || len(a.ctrl) > maxCtrl {
		t.Fatalf("%d TSNs above the cumulative one, %d outstanding, %d control chunks", a.recv.n, len(a.out)-a.outHead, len(a.ctrl))
	}
}

func boolU8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// TestZeroWindow: a peer that advertises a window of zero gets one chunk
// at a time (a probe), not a flood, and an association whose peer stops
// answering ends after MaxRetrans timeouts.
func TestZeroWindow(t *testing.T) {
	s, a := established(t)
	_ = s
	now := time.Unix(3000, 0)
	a.Handle(now, packet(a.myTag, sackBytes(a.cumAck, 0)))
	for range 20 {
		a.SendOrdered(1, PPIDBinary, make([]byte, 1000))
	}
	n := 0
	a.Flush(now, func(p []byte) { n++ })
	if a.flight > 1000 {
		t.Errorf("%d bytes in flight to a zero window", a.flight)
	}
	for i := 0; i < 100; i++ {
		now = now.Add(11 * time.Second)
		a.Flush(now, func([]byte) {})
	}
	if closed, err := a.Closed(); !closed || !errors.Is(err, ErrTimeout) {
		t.Errorf("after a silent peer: closed %v, %v", closed, err)
	}
}

func TestStreamReset(t *testing.T) {
	_, a := established(t)
	req := binary.BigEndian.AppendUint32(nil, 7)
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint32(req, a.recv.cum)
	req = binary.BigEndian.AppendUint16(req, 1)
	if err := a.Handle(time.Now(), packet(a.myTag, encodeChunk(ctReconfig, 0, appendParam(nil, ptOutgoingReset, req)))); err != nil {
		t.Fatal(err)
	}
	if got := a.Messages(nil); len(got) != 1 || !got[0].Reset || got[0].Stream != 1 {
		t.Errorf("messages after a reset of stream 1: %+v", got)
	}
	var resp []byte
	a.Flush(time.Now(), func(p []byte) { resp = bytes.Clone(p) })
	_, rest, _ := ParseHeader(resp)
	c, _, err := NextChunk(rest)
	if err != nil || c.Type != ctReconfig || binary.BigEndian.Uint32(c.Value[4:]) != 7 || binary.BigEndian.Uint32(c.Value[8:]) != 1 {
		t.Errorf("response %x (%v)", resp, err)
	}
}

// TestCookieStateless: a server association that answers INITs keeps no
// state for them; only a good COOKIE-ECHO establishes it.
func TestCookieStateless(t *testing.T) {
	now := time.Now()
	a := New(Config{}, now)
	init := encodeChunk(ctInit, 0, initValue(1234, 1<<16, 99, nil))
	for range 100 {
		if err := a.Handle(now, packet(0, init)); err != nil {
			t.Fatal(err)
		}
	}
	var acks [][]byte
	a.Flush(now, func(p []byte) { acks = append(acks, bytes.Clone(p)) })
	if a.st != stateNew || a.myTag != 0 || len(acks) == 0 {
		t.Fatalf("state %v tag %d after INITs, %d answers", a.st, a.myTag, len(acks))
	}
	_, rest, _ := ParseHeader(acks[0])
	c, _, _ := NextChunk(rest)
	in, err := parseInit(c)
	if err != nil || len(in.cookie) != cookieLen {
		t.Fatalf("INIT-ACK: %v, cookie %d bytes", err, len(in.cookie))
	}
	forged := bytes.Clone(in.cookie)
	forged[20] ^= 1
	if err := a.Handle(now, packet(in.tag, encodeChunk(ctCookieEcho, 0, forged))); !errors.Is(err, ErrProtocol) {
		t.Errorf("forged cookie: %v", err)
	}
	if err := a.Handle(now, packet(in.tag, encodeChunk(ctCookieEcho, 0, in.cookie))); err != nil || !a.Established() {
		t.Errorf("good cookie: %v, established %v", err, a.Established())
	}
	if a.peerTag != 1234 || a.recv.cum != 98 {
		t.Errorf("peer tag %d, cumulative TSN %d", a.peerTag, a.recv.cum)
	}
}

// TestBackoffCapped: retransmission timeouts double up to MaxBackoff and
// no further, both for INIT through a link that loses everything and for
// reliable DATA that nothing acknowledges; the INITs go on for about a
// minute before the association gives up.
func TestBackoffCapped(t *testing.T) {
	gaps := func(times []time.Time) []time.Duration {
		var g []time.Duration
		for i := 1; i < len(times); i++ {
			g = append(g, times[i].Sub(times[i-1]).Round(10*time.Millisecond))
		}
		return g
	}
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}

	now := time.Unix(1000, 0)
	a := New(Config{Client: true}, now)
	var inits []time.Time
	for range 7000 { // 70 s
		a.Flush(now, func([]byte) { inits = append(inits, now) })
		if closed, _ := a.Closed(); closed {
			break
		}
		now = now.Add(10 * time.Millisecond)
	}
	if g := gaps(inits); len(g) < len(want) || !slices.Equal(g[:len(want)], want) || slices.Max(g) != 3*time.Second {
		t.Errorf("INIT gaps %v, want %v then 3 s", g, want)
	}
	closed, err := a.Closed()
	if took := inits[len(inits)-1].Sub(inits[0]); !closed || !errors.Is(err, ErrTimeout) || took < 50*time.Second || took > 65*time.Second {
		t.Errorf("after %d INITs over %v: closed %v, %v; want a timeout after about a minute", len(inits), took, closed, err)
	}

	s, b := established(t)
	_ = s
	now = time.Unix(3000, 0)
	b.SendOrdered(1, PPIDBinary, []byte("catch-up"))
	var sends []time.Time
	for range 2000 { // 20 s, and nothing comes back
		b.Flush(now, func([]byte) { sends = append(sends, now) })
		now = now.Add(10 * time.Millisecond)
	}
	g := gaps(sends)
	if len(g) < 5 || slices.Max(g) > 3*time.Second || g[len(g)-1] != 3*time.Second {
		t.Errorf("DATA retransmission gaps %v: want them doubling to 3 s and staying there", g)
	}
}

// TestReliableNoAlloc: once its slabs are made, a steady stream of
// reliable messages, sent, flushed, received and acknowledged, allocates
// nothing: the one copy each message needs for retransmission lives in
// slabs used again once acknowledged.
func TestReliableNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := newSim(t, 1, 0, time.Millisecond)
	s.connect()
	a, b := s.ep[0].a, s.ep[1].a
	now := s.now
	// The link: packets copied into buffers kept from round to round.
	var wire [2][][]byte
	var n [2]int
	carry := func(from int) func([]byte) {
		return func(pkt []byte) {
			if n[from] == len(wire[from]) {
				wire[from] = append(wire[from], make([]byte, 0, 1500))
			}
			wire[from][n[from]] = append(wire[from][n[from]][:0], pkt...)
			n[from]++
		}
	}
	outA, outB := carry(0), carry(1)
	var msgs []Message
	got := 0
	msg := make([]byte, 300)
	round := func() {
		for range 4 {
			if err := a.SendOrdered(1, PPIDBinary, msg); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(5 * time.Millisecond)
		a.Flush(now, outA)
		for _, pkt := range wire[0][:n[0]] {
			b.Handle(now, pkt)
		}
		n[0] = 0
		msgs = b.Messages(msgs[:0])
		got += len(msgs)
		now = now.Add(200 * time.Millisecond) // past the SACK's delay
		b.Flush(now, outB)
		for _, pkt := range wire[1][:n[1]] {
			a.Handle(now, pkt)
		}
		n[1] = 0
	}
	for range 100 {
		round()
	}
	if allocs := testing.AllocsPerRun(200, round); allocs != 0 {
		t.Errorf("%v allocations a round of 4 reliable messages", allocs)
	}
	if got != 4*(100+201) || a.BufferedReliable() != 0 {
		t.Errorf("%d messages received of %d, %d bytes unacknowledged", got, 4*(100+201), a.BufferedReliable())
	}
	if k := len(a.rel.free); k > maxFreeSlabs {
		t.Errorf("%d free slabs kept, over %d", k, maxFreeSlabs)
	}
}

// TestSackRides: a game's small messages are not acknowledged in packets
// of their own: their SACK waits for the receiver's next DATA and rides
// with it (or goes after SackDelay). Bulk, two full packets, is
// acknowledged at once, as RFC 9260 §6.2 asks.
func TestSackRides(t *testing.T) {
	s := newSim(t, 1, 0, time.Millisecond)
	s.connect()
	s.run(300*time.Millisecond, 10*time.Millisecond) // every handshake packet acknowledged
	cli, srv := s.ep[0].a, s.ep[1].a
	base, sacks := s.sent[1], srv.Stats().SacksSent
	for range 4 { // inputs, a packet each, 10 ms apart
		if err := cli.SendUnordered(0, PPIDBinary, []byte("input")); err != nil {
			t.Fatal(err)
		}
		s.step(10 * time.Millisecond)
	}
	s.step(10 * time.Millisecond)
	if n := s.sent[1] - base; n != 0 {
		t.Fatalf("the receiver sent %d packets for 4 small ones with nothing of its own to send", n)
	}
	if err := srv.SendUnordered(0, PPIDBinary, []byte("frame")); err != nil {
		t.Fatal(err)
	}
	s.step(10 * time.Millisecond)
	if n, k := s.sent[1]-base, srv.Stats().SacksSent-sacks; n != 1 || k != 1 {
		t.Fatalf("the receiver's frame went in %d packets with %d SACKs, want the SACK riding in 1", n, k)
	}
	// Small messages with no DATA to ride on are acknowledged by SackDelay.
	base = s.sent[1]
	for range 2 {
		cli.SendUnordered(0, PPIDBinary, []byte("input"))
		s.step(10 * time.Millisecond)
	}
	s.run(srv.cfg.SackDelay, 10*time.Millisecond)
	if n := s.sent[1] - base; n != 1 {
		t.Fatalf("the receiver sent %d packets within SackDelay of 2 small ones, want 1 (the SACK)", n)
	}
	// Bulk: the second full packet is acknowledged at once.
	s.run(300*time.Millisecond, 10*time.Millisecond)
	base = s.sent[1]
	for range 2 {
		if err := cli.SendOrdered(1, PPIDBinary, make([]byte, 1100)); err != nil {
			t.Fatal(err)
		}
		s.step(time.Millisecond)
	}
	s.step(time.Millisecond)
	s.step(time.Millisecond)
	if n := s.sent[1] - base; n != 1 {
		t.Fatalf("the receiver sent %d packets within 4 ms of two full ones, want 1 (the SACK, at once)", n)
	}
}

// TestOutListStaysShort: the list of chunks sent and not yet acknowledged
// is as long as what is outstanding, not as what was ever sent, also when
// the round trip is longer than the time between messages (so the whole
// list is never acknowledged at once); and after a burst it moves back
// into the association's own memory, where a server's look-ahead finds it.
func TestOutListStaysShort(t *testing.T) {
	home := func(a *Assoc) bool { return unsafe.SliceData(a.out) == &a.outFew[0] }
	const most = 256 // what the burst and the round trip hold, grown by append; not what was ever sent
	for _, tc := range []struct {
		name  string
		delay time.Duration
		home  bool // back in the association's memory at the end
	}{
		{"loopback", time.Millisecond, true},
		{"60ms", 60 * time.Millisecond, false}, // 8 outstanding
		{"300ms", 300 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 3, 0, tc.delay)
			s.connect()
			srv := s.ep[1].a
			frame := make([]byte, 100)
			// A burst of reliable messages takes the list out of the
			// association.
			for range 40 {
				if err := srv.SendOrdered(1, PPIDBinary, frame); err != nil {
					t.Fatal(err)
				}
			}
			s.step(10 * time.Millisecond)
			if home(srv) {
				t.Fatalf("40 chunks outstanding in the association's own %d", outFewN)
			}
			// Then a frame every 16 ms for a minute, and the client's
			// input (which the SACKs ride with).
			for i := 0; i < 60*60; i++ {
				if err := srv.SendUnordered(0, PPIDBinary, frame); err != nil {
					t.Fatal(err)
				}
				if err := s.ep[0].a.SendUnordered(0, PPIDBinary, frame[:8]); err != nil {
					t.Fatal(err)
				}
				s.step(16 * time.Millisecond)
				if cap(srv.out) > most {
					t.Fatalf("frame %d: the list holds %d (%d outstanding), over %d", i, cap(srv.out), len(srv.out)-srv.outHead, most)
				}
			}
			t.Logf("at the end: %d outstanding, the list holds %d", len(srv.out)-srv.outHead, cap(srv.out))
			if tc.home && !home(srv) {
				t.Errorf("the list did not move back into the association (%d outstanding, cap %d)", len(srv.out)-srv.outHead, cap(srv.out))
			}
			if got := len(s.ep[0].got); got < 60*60 {
				t.Errorf("%d frames received of %d", got, 60*60)
			}
		})
	}
}
