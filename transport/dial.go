package transport

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/pion/webrtc/v4"
	"github.com/tongbu/tongbu/internal/errstack"
)

// ClientConfig configures Dial. A nil *ClientConfig means the defaults.
type ClientConfig struct {
	// Header is added to the signaling request (a ticket, for example).
	Header http.Header
	// HTTPClient posts the offer (default http.DefaultClient).
	HTTPClient *http.Client
	// IncludeLoopback offers loopback candidates (native only): for tests
	// and local demos on a machine with no other interface. Dialing a
	// loopback or localhost URL offers them anyway.
	IncludeLoopback bool
	// MaxAnswerBytes bounds the answer body (default 16 KiB).
	MaxAnswerBytes int64
	// Limits bound the connection.
	Limits Limits
	// Stack chooses the native implementation (default StackLean). The
	// lean stack's clients share one flusher, so that one process can
	// drive thousands of them; it ignores IncludeLoopback (a loopback
	// URL reaches a loopback candidate). In the browser, the browser's
	// own stack is used whatever this says.
	Stack Stack
	// SharedSocket lets the lean clients of this process that dial a
	// loopback server over IPv4 share one UDP socket, each sending from
	// an address of its own in 127.0.0.0/8, so that one reader and one
	// batched writer serve them all. It is for load generators and tests
	// that run thousands of clients in one process: on their own sockets
	// each datagram costs a wake-up and a system call. Linux only: Dial
	// fails with it elsewhere, before it posts the offer. A client whose
	// server is not at an IPv4 loopback address keeps its own socket.
	SharedSocket bool
	// Logger receives the client's logs (default: discarded).
	Logger *slog.Logger
	// Network chooses the lean client's path to a server that also serves
	// ICE over TCP (ServerConfig.TCPAddr): "" tries UDP, and TCP when UDP
	// has had no answer within a second (a network that blocks UDP);
	// "udp" or "tcp" takes that one only. The native pion client checks
	// the answer's TCP candidates beside UDP (unless "udp"); a browser's
	// ICE agent does the same on its own.
	Network string
}

// Dial connects to the signaling URL of a Server: it offers a peer
// connection with the two negotiated channels, posts the offer, applies the
// answer and returns once both channels are open. The same code runs
// natively and in the browser (GOOS=js), where pion wraps the browser's
// RTCPeerConnection.
func Dial(ctx context.Context, url string, cfg *ClientConfig) (Conn, error) {
	c, err := dial(ctx, url, cfg)
	return c, errstack.With(err)
}

func dial(ctx context.Context, url string, cfg *ClientConfig) (Conn, error) {
	if cfg == nil {
		cfg = &ClientConfig{}
	}
	lim := cfg.Limits.WithDefaults()
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	maxAnswer := cfg.MaxAnswerBytes
	if maxAnswer <= 0 {
		maxAnswer = 16 << 10
	}
	ctx, cancel := context.WithTimeout(ctx, lim.HandshakeTimeout)
	defer cancel()
	if cfg.Stack == StackLean && leanNative {
		return dialLean(ctx, url, cfg, lim, hc, maxAnswer)
	}

	var se webrtc.SettingEngine
	// A server reached over loopback is reached there for media too.
	configureAPI(&se, cfg.IncludeLoopback || isLoopbackURL(url))
	if err := clientNetwork(&se, cfg.Network); err != nil {
		return nil, err
	}
	pc, err := newAPI(se).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, fmt.Errorf("transport: peer connection: %w", err)
	}
	c, err := newRTCConn(0, pc, lim, log)
	if err != nil {
		pc.Close()
		return nil, err
	}
	fail := func(err error) (Conn, error) {
		c.closeWith(err)
		return nil, err
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return fail(fmt.Errorf("transport: offer: %w", err))
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		return fail(fmt.Errorf("transport: local description: %w", err))
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return fail(fmt.Errorf("transport: gathering candidates: %w", ctx.Err()))
	}
	body, err := postOffer(ctx, hc, url, cfg.Header, pc.LocalDescription().SDP, maxAnswer)
	if err != nil {
		return fail(err)
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: body}); err != nil {
		return fail(fmt.Errorf("transport: bad answer: %w", err))
	}
	select {
	case <-c.open:
		return c, nil
	case <-c.Done():
		return nil, fmt.Errorf("transport: connection closed during handshake: %w", c.Err())
	case <-ctx.Done():
		if st := pc.ICEConnectionState(); st != webrtc.ICEConnectionStateConnected && st != webrtc.ICEConnectionStateCompleted {
			return fail(fmt.Errorf("%w: no network path to the server (ICE %s): is its UDP port reachable from here, and does it advertise the right address (PublicIPs behind a NAT)? %w",
				ErrHandshakeTimeout, st, ctx.Err()))
		}
		if st := pc.ConnectionState(); st != webrtc.PeerConnectionStateConnected {
			return fail(fmt.Errorf("%w: the server answered ICE, but the DTLS handshake did not finish (connection %s): %w", ErrHandshakeTimeout, st, ctx.Err()))
		}
		return fail(fmt.Errorf("%w: DTLS done, but the SCTP association or the channels did not open: %w", ErrHandshakeTimeout, ctx.Err()))
	}
}

// postOffer posts an SDP offer to a signaling URL and returns the answer.
func postOffer(ctx context.Context, hc *http.Client, url string, header http.Header, offer string, maxAnswer int64) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(offer))
	if err != nil {
		return "", fmt.Errorf("transport: signaling request: %w", err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/sdp")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("transport: signaling: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	resp.Body.Close()
	switch {
	case err != nil:
		return "", fmt.Errorf("transport: reading answer: %w", err)
	case resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK:
		return "", &SignalingError{Status: resp.StatusCode, Reason: resp.Header.Get(RefusalHeader), Message: string(bytes.TrimSpace(body)), Header: resp.Header}
	case int64(len(body)) > maxAnswer:
		return "", fmt.Errorf("transport: answer over %d bytes", maxAnswer)
	}
	return string(body), nil
}

// SignalingError is a signaling request the server refused.
type SignalingError struct {
	Status int // HTTP status
	// Reason says why as a token a program can act on (the server's
	// RefusalHeader): the transport's own are "busy", "busy_addr" and
	// "busy_ticket" (too many handshakes in progress: retry after a
	// second), "closing", "origin" (the page's origin is not allowed),
	// "method", "content_type", "offer_too_large", "slow_offer",
	// "bad_offer", "forbidden" and "internal"; the engine adds its own
	// (engine.Dial turns them into its errors). Empty from a server that
	// gives none.
	Reason  string
	Message string // the server's explanation, for a person
	// Header holds the refusal's response headers: what a Refusal's
	// Header added (engine.Dial reads where a moved player went there).
	Header http.Header
}

func (e *SignalingError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("transport: signaling refused: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	}
	return fmt.Sprintf("transport: signaling refused (%s): %d %s: %s", e.Reason, e.Status, http.StatusText(e.Status), e.Message)
}

// RefusalHeader is the response header in which the server names why it
// refused a signaling request, as a token (SignalingError.Reason; SPEC.md
// section 6.1). Pages on other origins may read it.
const RefusalHeader = "Tongbu-Refusal"

// Refusal is an error for ServerConfig.Authorize or Admit to return: the
// request is refused with its Status and Reason (a short token of
// lowercase letters, digits and '_', which the client reads as
// SignalingError.Reason). Any other error refuses with 403, reason
// "forbidden".
type Refusal struct {
	Status int
	Reason string
	Err    error // what went wrong, for the message and errors.Is
	// Header, when set, is sent with the refusal (and exposed to pages
	// of other origins): what a client needs to act on it, beyond its
	// reason.
	Header http.Header
}

func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap returns Err.
func (r *Refusal) Unwrap() error { return r.Err }
