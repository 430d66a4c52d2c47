package transport

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/tongbu/tongbu/transport/internal/conn"
)

// Limits bound a WebRTC connection. Zero fields take the defaults; the
// server and the client share them.
type Limits struct {
	// MaxUnreliable is the largest message on the unreliable channel
	// (default DefaultMaxUnreliable, 1160 bytes: one SCTP chunk).
	MaxUnreliable int
	// MaxReliable is the largest message on the reliable channel (default
	// 16 KiB); split larger payloads with codec.Splitter. Each connection
	// keeps a read buffer of this size.
	MaxReliable int
	// HandshakeTimeout bounds the time from the offer to both channels
	// open (default 10 s).
	HandshakeTimeout time.Duration
	// ICETimeout bounds, on the server, the time from the offer to the
	// client's first authenticated ICE check (default HandshakeTimeout
	// / 2): an offer whose client never reaches the UDP port gives its
	// handshake slot back sooner than one that is connecting.
	ICETimeout time.Duration
	// IdleTimeout closes a connection that received nothing, not even a
	// keepalive, for this long (default 15 s).
	IdleTimeout time.Duration
	// KeepAlive is how long a side may stay silent before it sends a
	// keepalive (default IdleTimeout / 3).
	KeepAlive time.Duration
	// MaxBufferedUnreliable is the unreliable channel's buffered amount in
	// bytes above which new unreliable sends are dropped and counted
	// (default 64 KiB).
	MaxBufferedUnreliable int
	// MaxReliableQueue is the reliable channel's buffered amount in bytes
	// above which SendReliable fails with ErrQueueFull (default 4 MiB).
	MaxReliableQueue int
	// InboxUnreliable and InboxReliable bound the received messages held
	// for a reader that falls behind (default 1024 each). Unreliable ones
	// beyond the bound are dropped; reliable ones make the channel wait.
	InboxUnreliable int
	InboxReliable   int
}

// WithDefaults returns l with its zero fields set to their defaults: the
// limits a connection made with l has.
func (l Limits) WithDefaults() Limits { return Limits(conn.WithDefaults(conn.Limits(l))) }

// Channel parameters, identical on both sides (SPEC.md, "Data channels").
var (
	negotiated       = true
	unreliableID     = uint16(0)
	reliableID       = uint16(1)
	unordered        = false
	ordered          = true
	noRetransmits    = uint16(0)
	unreliableParams = webrtc.DataChannelInit{Negotiated: &negotiated, ID: &unreliableID, Ordered: &unordered, MaxRetransmits: &noRetransmits}
	reliableParams   = webrtc.DataChannelInit{Negotiated: &negotiated, ID: &reliableID, Ordered: &ordered}
)

// rtcConn is a Conn over one WebRTC peer connection with the two
// negotiated channels.
type rtcConn struct {
	conn.Core
	pc *webrtc.PeerConnection

	dc      [2]*webrtc.DataChannel
	send    [2]func([]byte) error // the platform's write path for each channel
	opened  atomic.Int32
	open    chan struct{} // closed once both channels are open
	timer   *time.Timer
	onOpen  func(*rtcConn)
	onClose func(*rtcConn, bool)

	closeOnce sync.Once
}

func newRTCConn(id PeerID, pc *webrtc.PeerConnection, lim Limits, log *slog.Logger) (*rtcConn, error) {
	c := &rtcConn{pc: pc, open: make(chan struct{})}
	c.Init(id, conn.Limits(lim), log)
	c.timer = time.AfterFunc(time.Hour, c.tick) // armed once both channels open
	c.timer.Stop()
	for ch, params := range []webrtc.DataChannelInit{unreliableParams, reliableParams} {
		label := Channel(ch).String()
		p := params
		dc, err := pc.CreateDataChannel(label, &p)
		if err != nil {
			return nil, fmt.Errorf("transport: creating channel %s: %w", label, err)
		}
		c.dc[ch] = dc
		c.attach(dc, Channel(ch))
	}
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		switch s {
		case webrtc.PeerConnectionStateFailed: // ICE found no path left (consent lost, network gone)
			go c.closeWith(fmt.Errorf("%w: peer connection %s", ErrPathLost, s))
		case webrtc.PeerConnectionStateClosed:
			go c.closeWith(fmt.Errorf("%w: peer connection %s", ErrClosed, s))
		}
	})
	return c, nil
}

// channelOpened is called by the platform code when a channel is ready.
func (c *rtcConn) channelOpened() {
	if c.opened.Add(1) == 2 {
		close(c.open)
		c.timer.Reset(c.Lim.KeepAlive)
		if c.onOpen != nil {
			c.onOpen(c)
		}
	}
}

func (c *rtcConn) isOpen() bool { return c.opened.Load() >= 2 }

// received is called by the platform code with each message read.
func (c *rtcConn) received(ch Channel, data []byte) {
	ok, err := c.Check(ch, data)
	if err != nil {
		go c.closeWith(err)
	}
	if ok {
		c.In.Push(Message{Channel: ch, Data: data})
	}
}

// tick sends a keepalive when this side has been silent, and closes the
// connection when the other side has been.
func (c *rtcConn) tick() {
	if c.IsDone() {
		return
	}
	now := time.Now()
	err, keepalive := c.Idle(now)
	if err != nil {
		c.closeWith(err)
		return
	}
	if keepalive {
		if err := c.send[Reliable](nil); err == nil {
			c.SentAt(now)
		}
	}
	c.timer.Reset(c.Lim.KeepAlive)
}

func (c *rtcConn) SendUnreliable(msg []byte) error {
	if err := c.CheckSend(msg, c.Lim.MaxUnreliable, c.isOpen()); err != nil {
		return err
	}
	if c.dc[Unreliable].BufferedAmount() > uint64(c.Lim.MaxBufferedUnreliable) {
		c.CountDropped()
		return ErrDropped
	}
	return c.write(Unreliable, msg)
}

func (c *rtcConn) SendReliable(msg []byte) error {
	if err := c.CheckSend(msg, c.Lim.MaxReliable, c.isOpen()); err != nil {
		return err
	}
	if c.dc[Reliable].BufferedAmount() > uint64(c.Lim.MaxReliableQueue) {
		return ErrQueueFull
	}
	return c.write(Reliable, msg)
}

func (c *rtcConn) write(ch Channel, msg []byte) error {
	if err := c.send[ch](msg); err != nil {
		return fmt.Errorf("transport: send on %s: %w", ch, err)
	}
	c.Sent(len(msg))
	return nil
}

func (c *rtcConn) Close() error {
	c.closeWith(nil)
	return nil
}

// closeWith closes the connection once, recording why, and waits for the
// peer connection to release its goroutines and sockets.
func (c *rtcConn) closeWith(reason error) {
	c.closeOnce.Do(func() {
		c.Closing(reason)
		wasOpen := c.isOpen()
		c.Finish()
		c.timer.Stop()
		if err := c.pc.Close(); err != nil {
			c.Log.Debug("transport: closing peer connection", "peer", c.ID(), "err", err)
		}
		if c.onClose != nil {
			c.onClose(c, wasOpen)
		}
	})
}

func (c *rtcConn) Stats() Stats { return c.Snapshot(c.rtt()) }
