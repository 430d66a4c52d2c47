//go:build js && wasm

package transport

import (
	"time"

	"github.com/pion/webrtc/v4"
)

// attach wires a channel the browser way: the browser delivers messages
// through onmessage, and sends go through RTCDataChannel.send.
func (c *rtcConn) attach(dc *webrtc.DataChannel, ch Channel) {
	c.send[ch] = dc.Send
	dc.OnMessage(func(m webrtc.DataChannelMessage) {
		c.received(ch, m.Data)
	})
	dc.OnOpen(c.channelOpened)
}

// rtt is not available from the browser's data channel API.
func (c *rtcConn) rtt() time.Duration { return 0 }

// configureAPI has no browser settings: the browser gathers its own
// candidates and reads its own channels.
func configureAPI(*webrtc.SettingEngine, bool) {}

// clientNetwork: the browser's ICE agent picks its own paths.
func clientNetwork(*webrtc.SettingEngine, string) error { return nil }

// newAPI returns the browser's API.
func newAPI(se webrtc.SettingEngine) *webrtc.API {
	return webrtc.NewAPI(webrtc.WithSettingEngine(se))
}
