//go:build !js

package engine

import (
	"net/http"
	"time"

	"github.com/tongbu/tongbu/transport"
)

// The timeouts HTTPServer sets. The offer's body has its own, shorter
// deadline (transport.ServerConfig.OfferTimeout).
const (
	// HTTPReadHeaderTimeout bounds the time to read a request's headers.
	HTTPReadHeaderTimeout = 5 * time.Second
	// HTTPReadTimeout bounds the time to read a whole request.
	HTTPReadTimeout = 15 * time.Second
	// HTTPIdleTimeout closes a keep-alive connection idle this long.
	HTTPIdleTimeout = 60 * time.Second
)

// HTTPServer returns an http.Server for h (usually Server.Handler) on addr
// (for ListenAndServe; empty when you call Serve with a listener) with
// the timeouts a server open to the internet needs: a client that sends its
// headers or its request slowly, or keeps a connection open and idle, is
// cut off instead of holding a descriptor. It sets no write timeout: the
// browser client's files are large and a slow link must be able to fetch
// them.
//
// Serve it on a listener from transport.NewListener (or LimitListener),
// so that one client network cannot open every connection and idle
// keep-alives cannot fill the server: the server tells the listener which
// connections sit idle (transport.ConnState), and at its MaxConns the one
// idle the longest makes room for a new one. Signaling answers end their
// connection (a client makes one request), so only pages keep a
// connection alive.
//
//	hs := engine.HTTPServer("", srv.Handler())
//	go hs.Serve(transport.NewListener(ln, transport.ListenerConfig{Networks: cfg.ClientNetworks}))
func HTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: HTTPReadHeaderTimeout,
		ReadTimeout:       HTTPReadTimeout,
		IdleTimeout:       HTTPIdleTimeout,
		ConnState:         transport.ConnState,
	}
}
