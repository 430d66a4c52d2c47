//go:build !js

package transport

import (
	"errors"
	"io"
	"time"

	"github.com/pion/webrtc/v4"
)

// attach wires a channel the native way: once open it is detached, and one
// goroutine reads it into the inbox with a buffer sized to the channel's
// limit, so no message is copied more than once.
func (c *rtcConn) attach(dc *webrtc.DataChannel, ch Channel) {
	max := c.lim.MaxUnreliable
	if ch == Reliable {
		max = c.lim.MaxReliable
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

func (c *rtcConn) readLoop(rwc io.Reader, ch Channel, max int) {
	buf := make([]byte, max)
	for {
		n, err := rwc.Read(buf)
		if err != nil {
			if errors.Is(err, io.ErrShortBuffer) {
				err = errors.Join(ErrTooLarge, err)
			}
			c.closeWith(err)
			return
		}
		c.received(ch, append([]byte(nil), buf[:n]...))
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
}
