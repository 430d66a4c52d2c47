//go:build !js

package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/transport"
)

func needBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err) // CI installs chromium: a missing one is a broken set-up, not a skip
		}
		t.Skip(err)
	}
}

// TestBrowserClient runs transport.Dial compiled to WASM in headless
// Chromium against the Go server, of each stack, and checks the echoes on
// both channels.
func TestBrowserClient(t *testing.T) {
	needBrowser(t)
	for _, stack := range []transport.Stack{transport.StackPion, transport.StackLean} {
		t.Run(stack.String(), func(t *testing.T) { browserClient(t, stack) })
	}
}

// pageResult opens url in headless Chromium and returns what the page
// sets window.tongbuResult to, waiting up to d.
func pageResult(t *testing.T, url string, d time.Duration) string {
	t.Helper()
	return pageResultWith(t, func(ctx context.Context) (context.Context, context.CancelFunc, error) { return browser.New(ctx, "") }, url, d)
}

// pageResultWith is pageResult in the browser start starts.
func pageResultWith(t *testing.T, start func(context.Context) (context.Context, context.CancelFunc, error), url string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	bctx, stop, err := start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var result string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(url),
		chromedp.Poll(`window.tongbuResult`, &result, chromedp.WithPollingTimeout(d)),
	); err != nil {
		t.Fatalf("browser: %v (result %q)", err, result)
	}
	return result
}

// echo serves s: every message goes back on the channel it came on.
func echo(s *transport.Server) {
	for {
		c, err := s.Accept(context.Background())
		if err != nil {
			return
		}
		go func() {
			for {
				m, err := c.Receive(context.Background())
				if err != nil {
					return
				}
				if m.Channel == transport.Reliable {
					c.SendReliable(m.Data)
				} else {
					c.SendUnreliable(m.Data)
				}
			}
		}()
	}
}

func browserClient(t *testing.T, stack transport.Stack) {
	dir := t.TempDir()
	wasm, err := browser.BuildWasm(dir, "github.com/tongbu/tongbu/transport/internal/wasmecho")
	if err != nil {
		t.Fatal(err)
	}
	wasmExec, err := browser.WasmExecJS()
	if err != nil {
		t.Fatal(err)
	}
	s, err := transport.NewServer(transport.ServerConfig{UDPAddr: "127.0.0.1:0", IncludeLoopback: true, AllowedOrigins: []string{"*"}, Stack: stack})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mux := http.NewServeMux()
	mux.Handle("/signal", s)
	mux.HandleFunc("/main.wasm", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/wasm")
		http.ServeFile(w, r, wasm)
	})
	mux.HandleFunc("/wasm_exec.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, wasmExec) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(browser.LoaderPage))
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()

	go echo(s)

	result := pageResult(t, hs.URL+"/", 60*time.Second)
	m := regexp.MustCompile(`^ok reliable=(\d+) unreliable=(\d+)$`).FindStringSubmatch(result)
	if m == nil {
		t.Fatalf("the browser client reported %q", result)
	}
	if m[1] != "100" {
		t.Fatalf("reliable echoes %s of 100", m[1])
	}
	t.Logf("browser client: %s", result)
}

// plainPage is a browser client written against RTCPeerConnection
// directly, from SPEC.md alone: the two negotiated channels, the offer
// posted to the signaling URL, 100 messages each way on each channel.
const plainPage = `<!doctype html><meta charset="utf-8"><script>
// One connection: resolves with the result, or throws saying how far it got.
async function attempt() {
  let stage = "offer";
  const pc = new RTCPeerConnection();
  try {
    const u = pc.createDataChannel("u", {negotiated: true, id: 0, ordered: false, maxRetransmits: 0});
    const r = pc.createDataChannel("r", {negotiated: true, id: 1, ordered: true});
    u.binaryType = r.binaryType = "arraybuffer";
    let rel = [], unrel = 0;
    r.onmessage = e => rel.push(new Uint8Array(e.data)[0]);
    u.onmessage = () => unrel++;
    const opened = Promise.all([u, r].map(c => new Promise(ok => c.onopen = ok)));
    await pc.setLocalDescription(await pc.createOffer());
    stage = "gathering";
    await new Promise(ok => { if (pc.iceGatheringState === "complete") ok(); pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && ok(); });
    stage = "signaling";
    const resp = await fetch("/signal", {method: "POST", headers: {"Content-Type": "application/sdp"}, body: pc.localDescription.sdp});
    if (resp.status !== 201) throw new Error("signaling " + resp.status + " " + await resp.text());
    await pc.setRemoteDescription({type: "answer", sdp: await resp.text()});
    stage = "opening";
    // A lossy path may outlast the server's handshake timeout: give up
    // on this connection after 20 s, as a game client would, and retry.
    await Promise.race([opened, new Promise((_, no) => setTimeout(() => no(new Error("not open in 20 s, " + pc.connectionState)), 20000))]);
    stage = "echoing";
    for (let i = 0; i < 100; i++) { r.send(new Uint8Array([i])); u.send(new Uint8Array([i, 1, 2, 3])); await new Promise(ok => setTimeout(ok, 2)); }
    const t0 = Date.now();
    while (rel.length < 100 && Date.now() - t0 < 10000) await new Promise(ok => setTimeout(ok, 20));
    const inOrder = rel.every((v, i) => v === i);
    return "ok reliable=" + rel.length + " ordered=" + inOrder + " unreliable=" + unrel;
  } catch (e) {
    throw new Error(stage + ": " + e.message);
  } finally {
    pc.close();
  }
}
(async () => {
  let why = "";
  for (let tries = 1; tries <= 3; tries++) {
    try {
      window.tongbuResult = await attempt() + (tries > 1 ? " tries=" + tries : "");
      return;
    } catch (e) { why += " [" + e.message + "]"; }
  }
  window.tongbuResult = "error" + why;
})();
</script>`

// TestPlainJSPage connects a page that uses RTCPeerConnection directly,
// not tongbu's client, to each stack.
func TestPlainJSPage(t *testing.T) {
	needBrowser(t)
	for _, stack := range []transport.Stack{transport.StackPion, transport.StackLean} {
		t.Run(stack.String(), func(t *testing.T) {
			s, err := transport.NewServer(transport.ServerConfig{UDPAddr: "127.0.0.1:0", AllowedOrigins: []string{"*"}, Stack: stack})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			go echo(s)
			mux := http.NewServeMux()
			mux.Handle("/signal", s)
			mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.Write([]byte(plainPage))
			})
			hs := httptest.NewServer(mux)
			defer hs.Close()
			result := pageResult(t, hs.URL+"/", 40*time.Second)
			m := regexp.MustCompile(`^ok reliable=100 ordered=true unreliable=(\d+)(?: tries=\d)?$`).FindStringSubmatch(result)
			if m == nil {
				t.Fatalf("the page reported %q", result)
			}
			if n, _ := strconv.Atoi(m[1]); n < 90 {
				t.Errorf("%d of 100 unreliable echoes on loopback", n)
			}
			t.Logf("%s: %s", stack, result)
		})
	}
}
