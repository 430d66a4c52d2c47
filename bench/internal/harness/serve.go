//go:build !js

package harness

import (
	"net"
	"net/http"
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
