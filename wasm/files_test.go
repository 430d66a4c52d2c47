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

	"github.com/andybalholm/brotli"
)

// TestFiles: a browser that accepts brotli gets the .br copy, one that
// accepts gzip only the .gz copy, each with Content-Encoding and the
// original's type; one that accepts neither, or refuses them with q=0,
// gets the plain file; the favicon is there. A compressed file says its
// decoded length, for the loader's progress bar.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	plain := bytes.Repeat([]byte("\x00asm tongbu "), 1000)
	if err := os.WriteFile(filepath.Join(dir, "game.wasm"), plain, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := compressChanged(filepath.Join(dir, "game.wasm")); err != nil {
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
		path, accept, ctype, enc string
	}{
		{"/game.wasm", "gzip, deflate, br", "application/wasm", "br"},
		{"/game.wasm", "gzip, deflate, br, zstd", "application/wasm", "br"},
		{"/game.wasm", "br;q=1.0, gzip;q=0.5", "application/wasm", "br"},
		{"/game.wasm", "br;q=0, gzip", "application/wasm", "gzip"},
		{"/game.wasm", "gzip", "application/wasm", "gzip"},
		{"/game.wasm", "*", "application/wasm", "br"},
		{"/game.wasm", "*;q=0", "application/wasm", ""},
		{"/game.wasm", "", "application/wasm", ""},
		{"/game.wasm", "gzip;q=0", "application/wasm", ""},
		{"/game.wasm", "gzip;q=0.000, br;q=0.0", "application/wasm", ""},
		{"/game.wasm", "identity", "application/wasm", ""},
		{"/wasm_exec.js", "gzip, br", "text/javascript; charset=utf-8", ""},
	} {
		resp := get(tt.path, tt.accept)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tt.ctype {
			t.Fatalf("%s (%q): %d %q", tt.path, tt.accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if enc := resp.Header.Get("Content-Encoding"); enc != tt.enc {
			t.Fatalf("%s (%q): Content-Encoding %q, want %q", tt.path, tt.accept, enc, tt.enc)
		}
		if tt.path == "/game.wasm" {
			// The loader's progress bar: the decoded length of a compressed file.
			if dl := resp.Header.Get(DecodedLengthHeader); (dl == strconv.Itoa(len(plain))) != (tt.enc != "") {
				t.Fatalf("%s (%q): %s %q", tt.path, tt.accept, DecodedLengthHeader, dl)
			}
			var r io.Reader = bytes.NewReader(body)
			switch tt.enc {
			case "gzip":
				zr, err := gzip.NewReader(r)
				if err != nil {
					t.Fatal(err)
				}
				r = zr
			case "br":
				r = brotli.NewReader(r)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("%s (%q): not the file (%v)", tt.path, tt.accept, err)
			}
		}
	}
	if resp := get("/favicon.ico", ""); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/x-icon" {
		t.Fatalf("favicon: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestCompressChanged: a client rebuilt with the same bytes keeps its
// compressed copies; one whose bytes changed, or whose copies are missing,
// is compressed again.
func TestCompressChanged(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "game.wasm")
	write := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := compressChanged(out); err != nil {
			t.Fatal(err)
		}
	}
	decoded := func() []byte {
		t.Helper()
		f, err := os.Open(out + ".gz")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := bytes.Repeat([]byte("first build "), 100)
	write(first)
	os.WriteFile(out+".br", []byte("marker"), 0o644) // a copy a recompression would replace
	write(first)
	if b, _ := os.ReadFile(out + ".br"); string(b) != "marker" {
		t.Fatal("the same bytes were compressed again")
	}
	second := bytes.Repeat([]byte("second build "), 100)
	write(second)
	if b, _ := os.ReadFile(out + ".br"); string(b) == "marker" || !bytes.Equal(decoded(), second) {
		t.Fatal("changed bytes kept the old compressed copies")
	}
	os.Remove(out + ".gz")
	write(second)
	if !bytes.Equal(decoded(), second) {
		t.Fatal("a missing copy was not written again")
	}
}
