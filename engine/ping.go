package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// PingUDPHeader is the header of a server's GET /ping answer that says
// where its UDP port answers region pings: "ip:port", or ":port" for the
// host the client reached.
const PingUDPHeader = "Tongbu-UDP"

// A region ping on the game's UDP port (SPEC.md §6.5, §9.8): 16 bytes, "TBPQ"
// then 12 of the client's own; the server sends them back as "TBPR".
const (
	pingSize  = 16
	pingMagic = "TBPQ"
	pongMagic = "TBPR"
)

// RegionNode is a node a player might play on, to measure: its region
// and the base URL of its HTTP (as Dial takes it). UDP, when set, is
// where its UDP port answers ("host:port"), for a node whose own answer
// cannot say (behind a proxy that maps the port).
type RegionNode struct {
	Region string
	URL    string
	UDP    string
}

// RegionPing is what MeasureRegions found of one region: the round trip
// to its best node (the median of the pings answered), the jitter (the
// mean difference between consecutive round trips), and the share of
// pings lost. Over says how it measured: "udp" on the game's own port
// (from a browser, by STUN probes), or "http" (a path that drops UDP, or
// MeasureConfig.HTTPOnly: round trips over TCP
// include its setup no more, but a lost ping costs a retransmission,
// not a loss). Err is set when no node of the region answered.
type RegionPing struct {
	Region string
	Node   string // the URL of the node measured
	RTT    time.Duration
	Jitter time.Duration
	Loss   float64
	Sent   int
	Over   string
	Err    error
}

// MeasureConfig tunes MeasureRegions; the zero value is the default.
type MeasureConfig struct {
	Pings      int           // pings per node (default 10)
	Interval   time.Duration // between two pings (default 20 ms)
	Timeout    time.Duration // for the last answer (default 1 s)
	HTTPClient *http.Client  // for GET /ping (default http.DefaultClient)
	// HTTPOnly measures over HTTP alone.
	HTTPOnly bool
}

// MeasureRegions measures the round trip, jitter and loss from here to
// each node, side by side, and returns one RegionPing per region (its
// best node's), in the order of the regions' first nodes. A player's
// client runs it before it asks its lobby for a match; the lobby passes
// RegionRTTs(pings) as matchmaker.Ticket.RTT. Natively it pings the
// node's UDP port, the path the game will use, and falls back to HTTP
// when that port does not answer; in a browser (js/wasm), which sends no
// raw UDP, it times STUN binding requests to that port, one
// RTCPeerConnection each (the network test's probe, SPEC.md §9.8).
// It returns an error only when ctx ends before any answer.
func MeasureRegions(ctx context.Context, nodes []RegionNode, cfg *MeasureConfig) ([]RegionPing, error) {
	c := MeasureConfig{}
	if cfg != nil {
		c = *cfg
	}
	if c.Pings <= 0 {
		c.Pings = 10
	}
	if c.Interval <= 0 {
		c.Interval = 20 * time.Millisecond
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	res := make([]RegionPing, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = measureNode(ctx, n, &c)
		}()
	}
	wg.Wait()
	var out []RegionPing
	at := map[string]int{}
	for _, r := range res {
		k, ok := at[r.Region]
		switch {
		case !ok:
			at[r.Region] = len(out)
			out = append(out, r)
		case r.Err == nil && (out[k].Err != nil || r.RTT < out[k].RTT):
			out[k] = r
		}
	}
	if err := ctx.Err(); err != nil && !slices.ContainsFunc(out, func(r RegionPing) bool { return r.Err == nil }) {
		return out, err
	}
	return out, nil
}

// RegionRTTs returns the round trips of the regions measured, in
// milliseconds, as matchmaker.Ticket.RTT takes them.
func RegionRTTs(pings []RegionPing) map[string]int {
	m := map[string]int{}
	for _, p := range pings {
		if p.Err == nil {
			m[p.Region] = max(1, int((p.RTT+time.Millisecond/2)/time.Millisecond))
		}
	}
	return m
}

// measureNode measures one node: GET /ping (which says where its UDP
// port is), then UDP pings, or HTTP pings when UDP does not answer.
func measureNode(ctx context.Context, n RegionNode, c *MeasureConfig) RegionPing {
	r := RegionPing{Region: n.Region, Node: n.URL}
	base, err := url.Parse(strings.TrimSuffix(n.URL, "/"))
	if err != nil || base.Host == "" {
		r.Err = fmt.Errorf("%w: node URL %q", ErrConfig, n.URL)
		return r
	}
	first, udp, err := httpPing(ctx, c.HTTPClient, base.String()+PingPath)
	if err != nil {
		r.Err = err
		return r
	}
	if n.UDP != "" {
		udp = n.UDP
	}
	if !c.HTTPOnly && udp != "" {
		if host, port, err := net.SplitHostPort(udp); err == nil {
			if host == "" {
				host = base.Hostname()
			}
			if rtts, sent, err := probeUDP(ctx, net.JoinHostPort(host, port), c); err == nil && len(rtts) > 0 {
				r.Over, r.Sent = "udp", sent
				r.RTT, r.Jitter, r.Loss = pingStats(rtts, sent)
				return r
			}
		}
	}
	// HTTP: the first request set the connection up; the next ones ride it.
	rtts := []time.Duration{first}
	sent := 1
	for ; sent < c.Pings && ctx.Err() == nil; sent++ {
		rtt, _, err := httpPing(ctx, c.HTTPClient, base.String()+PingPath)
		if err == nil {
			rtts = append(rtts, rtt)
		}
	}
	if len(rtts) > 1 {
		rtts = rtts[1:] // the first one's connection setup is no round trip of the game's
		sent--
	}
	r.Over, r.Sent = "http", sent
	r.RTT, r.Jitter, r.Loss = pingStats(rtts, sent)
	return r
}

// httpPing sends GET /ping and returns its round trip and the UDP address
// the answer names.
func httpPing(ctx context.Context, hc *http.Client, u string) (time.Duration, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("engine: ping %s: %w", u, err)
	}
	resp.Body.Close()
	rtt := time.Since(start)
	if resp.StatusCode != http.StatusNoContent {
		return 0, "", fmt.Errorf("engine: ping %s: %s", u, resp.Status)
	}
	return rtt, resp.Header.Get(PingUDPHeader), nil
}

// udpPings sends c.Pings region pings to addr, c.Interval apart, and
// returns the round trips of those answered.
func udpPings(ctx context.Context, addr string, c *MeasureConfig) ([]time.Duration, int, error) {
	conn, err := dialUDP(ctx, addr)
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close()
	var nonce [8]byte
	rand.Read(nonce[:])
	sentAt := make([]time.Time, c.Pings)
	got := make([]time.Duration, c.Pings)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			if n != pingSize || string(buf[:4]) != pongMagic || string(buf[4:12]) != string(nonce[:]) {
				continue
			}
			if i := int(binary.LittleEndian.Uint32(buf[12:])); i < c.Pings && got[i] == 0 && !sentAt[i].IsZero() {
				got[i] = max(time.Since(sentAt[i]), time.Microsecond)
			}
		}
	}()
	var msg [pingSize]byte
	copy(msg[:], pingMagic)
	copy(msg[4:], nonce[:])
	sent := 0
	for i := range c.Pings {
		if ctx.Err() != nil {
			break
		}
		binary.LittleEndian.PutUint32(msg[12:], uint32(i))
		sentAt[i] = time.Now()
		conn.Write(msg[:])
		sent++
		if i < c.Pings-1 {
			time.Sleep(c.Interval)
		}
	}
	deadline := time.Now().Add(c.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetReadDeadline(deadline)
	<-done
	var rtts []time.Duration
	for _, d := range got[:sent] {
		if d > 0 {
			rtts = append(rtts, d)
		}
	}
	return rtts, sent, nil
}

// stunRetransmit is how much later than the fastest a browser's STUN
// probe may answer and still count: one later came after the browser's
// retransmission (250 ms or more), its first request or answer lost.
const stunRetransmit = 200 * time.Millisecond

// stunRTTs takes the times of a browser's STUN probes (probeUDP in
// js/wasm; negative: no answer) and returns the round trips of those that
// answered in time, and how many were sent.
func stunRTTs(times []time.Duration) ([]time.Duration, int) {
	fastest := time.Duration(-1)
	for _, t := range times {
		if t >= 0 && (fastest < 0 || t < fastest) {
			fastest = t
		}
	}
	var rtts []time.Duration
	for _, t := range times {
		if t >= 0 && t < fastest+stunRetransmit {
			rtts = append(rtts, max(t, time.Microsecond))
		}
	}
	return rtts, len(times)
}

// pingStats returns the median round trip, the mean difference between
// consecutive ones, and the share of sent pings not answered.
func pingStats(rtts []time.Duration, sent int) (rtt, jitter time.Duration, loss float64) {
	if sent > 0 {
		loss = 1 - float64(len(rtts))/float64(sent)
	}
	if len(rtts) == 0 {
		return 0, 0, loss
	}
	var diff time.Duration
	for i := 1; i < len(rtts); i++ {
		diff += max(rtts[i]-rtts[i-1], rtts[i-1]-rtts[i])
	}
	if len(rtts) > 1 {
		jitter = diff / time.Duration(len(rtts)-1)
	}
	s := slices.Clone(rtts)
	slices.Sort(s)
	return s[len(s)/2], jitter, loss
}
