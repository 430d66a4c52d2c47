//go:build !js

package harness

import (
	"context"
	"net"
	"net/http"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/transport"
)

// ServeHTTP serves h on a fresh loopback port and returns its base URL
// and a function that stops it.
func ServeHTTP(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { hs.Close() }, nil
}

// ServeEngine serves srv: its signaling with ServeHTTP, its connections
// with Serve. It returns the base URL and a function that stops both and
// waits for Serve to return.
func ServeEngine(srv *engine.Server) (string, func(), error) {
	url, stopHTTP, err := ServeHTTP(srv.Handler())
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	return url, func() { cancel(); <-served; stopHTTP() }, nil
}

// ServeFacing serves srv as tongbu serve does, facing the internet: its
// HTTP side with engine.HTTPServer on a transport.NewListener of lc, on a
// fresh loopback port, and its connections with Serve. It returns the
// base URL (no trailing slash) and a function that stops both and waits
// for Serve to return.
func ServeFacing(srv *engine.Server, lc transport.ListenerConfig) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := engine.HTTPServer("", srv.Handler())
	go hs.Serve(transport.NewListener(ln, lc))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	return "http://" + ln.Addr().String(), func() { cancel(); <-served; hs.Close() }, nil
}

// ServeFacingHandler serves h on a loopback port behind
// transport.NewListener's bounds, as a server facing the internet would
// serve a listener of its own (tongbu serve's ACME challenges), and
// returns its base URL and a stop function.
func ServeFacingHandler(h http.Handler, lc transport.ListenerConfig) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := engine.HTTPServer("", h)
	go hs.Serve(transport.NewListener(ln, lc))
	return "http://" + ln.Addr().String(), func() { hs.Close() }, nil
}
