//go:build linux

package transport_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/internal/netns"
	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/transport"
)

func needFirefox(t *testing.T) {
	if _, err := browser.FirefoxPath(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err) // CI installs firefox-esr
		}
		t.Skip(err)
	}
}

// TestFirefox runs the browser tests of Chromium in Firefox ESR (its own
// WebRTC: usrsctp, NSS), against a server of each stack, with the plain
// RTCPeerConnection page and tongbu's WASM client, on a clean path and on
// one that loses 10% of the packets each way. Firefox gathers no loopback
// candidate: it runs in a network namespace and reaches the server at the
// other end of its veth. No driver: each page posts its result to the
// server it came from.
func TestFirefox(t *testing.T) {
	needFirefox(t)
	dir := t.TempDir()
	wasm, err := browser.BuildWasm(dir, "github.com/tongbu/tongbu/transport/internal/wasmecho")
	if err != nil {
		t.Fatal(err)
	}
	wasmExec, err := browser.WasmExecJS()
	if err != nil {
		t.Fatal(err)
	}
	for _, loss := range []float64{0, 0.1} {
		for _, stack := range []transport.Stack{transport.StackLean, transport.StackPion} {
			t.Run(stack.String()+"/loss="+strconv.FormatFloat(loss, 'f', -1, 64), func(t *testing.T) {
				results := make(chan string, 4)
				_, ns, url := nsServer(t, stack, netns.Options{Loss: loss}, func(mux *http.ServeMux) {
					page := func(html string) http.HandlerFunc {
						return func(w http.ResponseWriter, r *http.Request) {
							w.Header().Set("Content-Type", "text/html; charset=utf-8")
							io.WriteString(w, strings.Replace(html, "</body>", browser.Reporter+"</body>", 1))
						}
					}
					mux.HandleFunc("/plain", page(plainPage+"</body>"))
					mux.HandleFunc("/main.wasm", func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Type", "application/wasm")
						http.ServeFile(w, r, wasm)
					})
					mux.HandleFunc("/wasm_exec.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, wasmExec) })
					mux.HandleFunc("/wasm", page(browser.LoaderPage))
					mux.HandleFunc("/result", func(w http.ResponseWriter, r *http.Request) {
						b, _ := io.ReadAll(io.LimitReader(r.Body, 1024))
						select {
						case results <- string(b):
						default:
						}
					})
				})
				open := func(path string) string {
					t.Helper()
					ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
					defer cancel()
					stop, err := browser.Firefox(ctx, ns, url+path)
					if err != nil {
						t.Fatal(err)
					}
					defer stop()
					select {
					case r := <-results:
						return r
					case <-ctx.Done():
						t.Fatalf("Firefox reported nothing from %s in 90 s", path)
						return ""
					}
				}
				result := open("/plain")
				m := regexp.MustCompile(`^ok reliable=100 ordered=true unreliable=(\d+)$`).FindStringSubmatch(result)
				if m == nil {
					t.Fatalf("the plain page reported %q", result)
				}
				// Each echo crosses the lossy path twice: about 81 of 100 come
				// back at 10% loss, from the lean stack; pion's server has
				// brought back as few as 55 of them.
				least := 90
				if loss > 0 {
					least = map[transport.Stack]int{transport.StackLean: 60, transport.StackPion: 30}[stack]
				}
				if n, _ := strconv.Atoi(m[1]); n < least {
					t.Errorf("%d of 100 unreliable echoes at %.0f%% loss each way, want %d at least", n, 100*loss, least)
				}
				wresult := open("/wasm")
				if !regexp.MustCompile(`^ok reliable=100 unreliable=\d+$`).MatchString(wresult) {
					t.Fatalf("the WASM client reported %q", wresult)
				}
				t.Logf("Firefox, %s, %.0f%% loss: plain page %s; WASM client %s", stack, 100*loss, result, wresult)
			})
		}
	}
}
