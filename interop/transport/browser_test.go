//go:build !js

package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/transport"
)

// TestBrowserClient runs transport.Dial compiled to WASM in headless
// Chromium against the Go server, and checks the echoes on both channels.
func TestBrowserClient(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err) // CI installs chromium: a missing one is a broken set-up, not a skip
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	wasm, err := browser.BuildWasm(dir, "github.com/tongbu/tongbu/transport/internal/wasmecho")
	if err != nil {
		t.Fatal(err)
	}
	wasmExec, err := browser.WasmExecJS()
	if err != nil {
		t.Fatal(err)
	}
	s, err := transport.NewServer(transport.ServerConfig{UDPAddr: "127.0.0.1:0", IncludeLoopback: true, AllowedOrigins: []string{"*"}})
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

	go func() { // echo every message on the channel it came on
		c, err := s.Accept(context.Background())
		if err != nil {
			return
		}
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

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bctx, stop, err := browser.New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var result string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(hs.URL+"/"),
		chromedp.Poll(`window.tongbuResult`, &result, chromedp.WithPollingTimeout(60*time.Second)),
	); err != nil {
		t.Fatalf("browser: %v (result %q)", err, result)
	}
	m := regexp.MustCompile(`^ok reliable=(\d+) unreliable=(\d+)$`).FindStringSubmatch(result)
	if m == nil {
		t.Fatalf("the browser client reported %q", result)
	}
	if m[1] != "100" {
		t.Fatalf("reliable echoes %s of 100", m[1])
	}
	t.Logf("browser client: %s", result)
}
