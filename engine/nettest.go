//go:build !js

package engine

import (
	_ "embed"
	"net/http"
)

var (
	//go:embed nettest/nettest.html
	netTestPage []byte
	//go:embed nettest/nettest.js
	netTestJS []byte
)

// netTest serves the network test's page (NetTestPath) and its script
// (NetTestScript), which any page may load: it holds nothing a client
// could not read from the script itself.
func netTest(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	body, kind := netTestPage, "text/html; charset=utf-8"
	if r.URL.Path == NetTestScript {
		body, kind = netTestJS, "text/javascript; charset=utf-8"
		h.Set("Access-Control-Allow-Origin", "*")
	}
	h.Set("Content-Type", kind)
	w.Write(body)
}
