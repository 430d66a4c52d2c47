//go:build !js

package transport

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
)

// attach wires a channel the native way: once open it is detached, and one
// goroutine reads it into the inbox with a buffer sized to the channel's
// limit, so no message is copied more than once.
func (c *rtcConn) attach(dc *webrtc.DataChannel, ch Channel) {
	max := c.Lim.MaxUnreliable
	if ch == Reliable {
		max = c.Lim.MaxReliable
	}
	dc.OnOpen(func() {
		rwc, err := dc.Detach()
		if err != nil {
			go c.closeWith(err)
			return
		}
		c.send[ch] = func(b []byte) error {
			_, err := rwc.Write(b)
			return err
		}
		go c.readLoop(rwc, ch, max)
		c.channelOpened()
	})
}

// readLoop reads messages straight into a slab, each message a capped
// slice of it: no allocation and no copy per message. A slab is freed
// when the last message in it is. The reliable channel, whose messages
// are rare and large, uses one message per slab.
func (c *rtcConn) readLoop(rwc io.Reader, ch Channel, max int) {
	slabSize := max
	if ch == Unreliable {
		slabSize = 8 * max
	}
	var slab []byte
	for {
		if cap(slab)-len(slab) < max {
			slab = make([]byte, 0, slabSize)
		}
		start := len(slab)
		n, err := rwc.Read(slab[start : start+max])
		if err != nil {
			if errors.Is(err, io.ErrShortBuffer) {
				err = errors.Join(ErrTooLarge, err)
			}
			c.closeWith(err)
			return
		}
		slab = slab[:start+n]
		c.received(ch, slab[start:start+n:start+n])
	}
}

// rtt returns SCTP's smoothed round-trip time.
func (c *rtcConn) rtt() time.Duration {
	sctp := c.pc.SCTP()
	if sctp == nil {
		return 0
	}
	return time.Duration(sctp.Stats().SmoothedRoundTripTime * float64(time.Second))
}

// configureAPI sets the native-only settings.
func configureAPI(se *webrtc.SettingEngine, includeLoopback bool) {
	se.DetachDataChannels()
	se.SetIncludeLoopbackCandidate(includeLoopback)
	// DTLS already authenticates every packet: skip SCTP's CRC32c when the
	// peer agrees (RFC 9653); a peer that does not keeps the checksum.
	se.EnableSCTPZeroChecksum(true)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	// Timeouts back SCTP's retransmission timer off to 3 s at most, as
	// libwebrtc's and the lean stack's do: pion's default of 60 s lets a
	// few lost retransmissions in a row stall a lossy path for half a
	// minute (TestLeanThroughLoss's pion client once delivered 6 of 300).
	se.SetSCTPRTOMax(3 * time.Second)
}

// clientNetwork sets the paths a native pion client may take
// (ClientConfig.Network): UDP, then TCP to a server's passive TCP
// candidate (pion dials it when the answer offers one) by default.
func clientNetwork(se *webrtc.SettingEngine, network string) error {
	udp := []webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6}
	tcp := []webrtc.NetworkType{webrtc.NetworkTypeTCP4, webrtc.NetworkTypeTCP6}
	switch network {
	case "":
		se.SetNetworkTypes(append(udp, tcp...))
	case "udp":
		se.SetNetworkTypes(udp)
	case "tcp":
		se.SetNetworkTypes(tcp)
	default:
		return fmt.Errorf("transport: network %q: want \"udp\", \"tcp\" or \"\"", network)
	}
	return nil
}

// newAPI returns a pion API for data channels only: no codecs, no RTP
// interceptors (NACK, reports, TWCC would run for every peer though no
// media flows) and, with configureAPI, no mDNS.
func newAPI(se webrtc.SettingEngine) *webrtc.API {
	return webrtc.NewAPI(webrtc.WithSettingEngine(se), webrtc.WithMediaEngine(&webrtc.MediaEngine{}),
		webrtc.WithInterceptorRegistry(&interceptor.Registry{}))
}
