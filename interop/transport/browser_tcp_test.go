//go:build linux

package transport_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/internal/netns"
	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/transport"
)

// blockedServer starts a server of stack with ICE-TCP on, at the
// address of a network namespace's other end, and serves mux's pages and
// its signaling at /signal there; the namespace drops every UDP datagram.
// A browser in it reaches the server as a player behind a UDP block
// reaches a game server: over TCP only.
func blockedServer(t *testing.T, stack transport.Stack, pages func(mux *http.ServeMux)) (*transport.Server, *netns.NS, string) {
	t.Helper()
	return nsServer(t, stack, netns.Options{BlockUDP: true}, pages)
}

// nsServer is blockedServer with a namespace made with opt.
func nsServer(t *testing.T, stack transport.Stack, opt netns.Options, pages func(mux *http.ServeMux)) (*transport.Server, *netns.NS, string) {
	t.Helper()
	ns := netns.ForTest(t, opt)
	host := ns.Host.String()
	s, err := transport.NewServer(transport.ServerConfig{UDPAddr: host + ":0", TCPAddr: host + ":0",
		AllowedOrigins: []string{"*"}, Stack: stack})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	go echo(s)
	mux := http.NewServeMux()
	mux.Handle("/signal", s)
	pages(mux)
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(mux)
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	return s, ns, hs.URL
}

// pageResultIn is pageResult with Chromium inside ns.
func pageResultIn(t *testing.T, ns *netns.NS, url string, d time.Duration) string {
	t.Helper()
	return pageResultWith(t, func(ctx context.Context) (context.Context, context.CancelFunc, error) { return browser.NewIn(ctx, ns) }, url, d)
}

// echoPages builds the WASM echo client and returns what serves, on a
// mux, the plain page at /plain and the WASM client at /wasm, with
// scripts added at their ends (reporters, for Firefox).
func echoPages(t *testing.T) func(mux *http.ServeMux, plainScript, wasmScript string) {
	t.Helper()
	dir := t.TempDir()
	wasm, err := browser.BuildWasm(dir, "github.com/tongbu/tongbu/transport/internal/wasmecho")
	if err != nil {
		t.Fatal(err)
	}
	wasmExec, err := browser.WasmExecJS()
	if err != nil {
		t.Fatal(err)
	}
	return func(mux *http.ServeMux, plainScript, wasmScript string) {
		page := func(html, script string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, strings.Replace(html, "</body>", script+"</body>", 1))
			}
		}
		mux.HandleFunc("/plain", page(plainPage+"</body>", plainScript))
		mux.HandleFunc("/wasm", page(browser.LoaderPage, wasmScript))
		mux.HandleFunc("/main.wasm", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/wasm")
			http.ServeFile(w, r, wasm)
		})
		mux.HandleFunc("/wasm_exec.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, wasmExec) })
	}
}

// TestBrowserBlockedUDP: Chromium, on a network that drops every UDP
// datagram, connects over ICE-TCP to a server of each stack, with the
// plain RTCPeerConnection page and with tongbu's WASM client, and echoes
// on both channels; on TCP none of the unreliable messages is lost.
func TestBrowserBlockedUDP(t *testing.T) {
	needBrowser(t)
	pages := echoPages(t)
	for _, stack := range []transport.Stack{transport.StackLean, transport.StackPion} {
		t.Run(stack.String(), func(t *testing.T) {
			s, ns, url := blockedServer(t, stack, func(mux *http.ServeMux) { pages(mux, "", "") })
			result := pageResultIn(t, ns, url+"/plain", 60*time.Second)
			if !regexp.MustCompile(`^ok reliable=100 ordered=true unreliable=100(?: tries=\d)?$`).MatchString(result) {
				t.Fatalf("the plain page reported %q", result)
			}
			result = pageResultIn(t, ns, url+"/wasm", 60*time.Second)
			if !regexp.MustCompile(`^ok reliable=100 unreliable=\d+$`).MatchString(result) {
				t.Fatalf("the WASM client reported %q", result)
			}
			if stack == transport.StackLean {
				if st := s.DataPath(); st.TCPPaths < 2 || st.Datagrams != 0 {
					t.Errorf("TCP paths %d (want 2), UDP datagrams %d (want 0: UDP is blocked)", st.TCPPaths, st.Datagrams)
				}
			}
			t.Logf("%s over TCP: %s", stack, result)
		})
	}
}
