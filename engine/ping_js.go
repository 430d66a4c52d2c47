//go:build js

package engine

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/pion/webrtc/v4"
)

// probeUDP measures the game's UDP port from a browser, which sends no
// raw UDP: each probe is a fresh RTCPeerConnection whose only ICE server
// is the port, which answers STUN binding requests (SPEC.md §6.5); the
// time to its server-reflexive candidate is the request's round trip.
func probeUDP(ctx context.Context, addr string, c *MeasureConfig) ([]time.Duration, int, error) {
	url := "stun:" + addr // addr is host:port, an IPv6 host in brackets
	var times []time.Duration
	for i := 0; i < c.Pings && ctx.Err() == nil; i++ {
		d, err := stunProbe(ctx, url, c.Timeout)
		if err != nil {
			return nil, 0, err
		}
		times = append(times, d)
		if i < c.Pings-1 {
			time.Sleep(c.Interval)
		}
	}
	rtts, sent := stunRTTs(times)
	return rtts, sent, nil
}

// stunProbe runs one probe: the time to the server-reflexive candidate,
// or -1 when none came within timeout.
func stunProbe(ctx context.Context, url string, timeout time.Duration) (time.Duration, error) {
	pc, err := webrtc.NewPeerConnection(webrtc.Configuration{ICEServers: []webrtc.ICEServer{{URLs: []string{url}}}})
	if err != nil {
		return 0, err
	}
	defer pc.Close()
	if _, err := pc.CreateDataChannel("probe", nil); err != nil {
		return 0, err
	}
	got := make(chan time.Time, 1)
	pc.OnICECandidate(func(cand *webrtc.ICECandidate) {
		if cand != nil && cand.Typ == webrtc.ICECandidateTypeSrflx {
			select {
			case got <- time.Now():
			default:
			}
		}
	})
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := pc.SetLocalDescription(offer); err != nil {
		return 0, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case at := <-got:
		return at.Sub(start), nil
	case <-t.C:
		return -1, nil
	case <-ctx.Done():
		return -1, nil
	}
}

// dialUDP: udpPings, native only, is never called here.
func dialUDP(context.Context, string) (net.Conn, error) {
	return nil, errors.New("engine: no UDP in a browser")
}
