//go:build !js

package wasm

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestFiles: a browser that accepts gzip gets the .gz copy with
// Content-Encoding and the original's type; one that does not gets the
// plain file; the favicon is there. A compressed file says its decoded
// length, for the loader's progress bar.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	plain := bytes.Repeat([]byte("\x00asm tongbu "), 1000)
	if err := os.WriteFile(filepath.Join(dir, "game.wasm"), plain, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := gzipFile(filepath.Join(dir, "game.wasm")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "wasm_exec.js"), []byte("// loader"), 0o644)
	h := Files(dir)
	get := func(p, accept string) *http.Response {
		req := httptest.NewRequest(http.MethodGet, p, nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	for _, tt := range []struct {
		path, accept, ctype string
		gzipped             bool
	}{
		{"/game.wasm", "gzip, deflate, br", "application/wasm", true},
		{"/game.wasm", "br;q=1.0, gzip;q=0.5", "application/wasm", true},
		{"/game.wasm", "", "application/wasm", false},
		{"/game.wasm", "gzip;q=0", "application/wasm", false},
		{"/wasm_exec.js", "gzip", "text/javascript; charset=utf-8", false},
	} {
		resp := get(tt.path, tt.accept)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tt.ctype {
			t.Fatalf("%s (%q): %d %q", tt.path, tt.accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if gz := resp.Header.Get("Content-Encoding") == "gzip"; gz != tt.gzipped {
			t.Fatalf("%s (%q): gzip %v, want %v", tt.path, tt.accept, gz, tt.gzipped)
		}
		if tt.path == "/game.wasm" {
			// The loader's progress bar: the decoded length of a compressed file.
			if dl := resp.Header.Get(DecodedLengthHeader); (dl == strconv.Itoa(len(plain))) != tt.gzipped {
				t.Fatalf("%s (%q): %s %q", tt.path, tt.accept, DecodedLengthHeader, dl)
			}
			if tt.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(body, plain) {
				t.Fatalf("%s (%q): not the file", tt.path, tt.accept)
			}
		}
	}
	if resp := get("/favicon.ico", ""); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/x-icon" {
		t.Fatalf("favicon: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
