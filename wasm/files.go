//go:build !js

package wasm

import (
	_ "embed"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

//go:embed favicon.ico
var favicon []byte

// DecodedLengthHeader carries, on a compressed response, the length of
// the file once decoded, for the loader page's progress bar (a browser's
// Content-Length is the compressed size, and it hands the page decoded
// bytes).
const DecodedLengthHeader = "X-Decoded-Length"

// Files serves the files of dir, such as Build writes: a .wasm file as
// application/wasm, and, in its place, the brotli (.br) or gzip (.gz) copy
// beside it to a browser that accepts that encoding, brotli first, with
// Content-Encoding and the original's Content-Type, which makes a
// client's download several times smaller. /favicon.ico is tongbu's
// unless dir holds one. Files are revalidated on each load (no-cache), so
// a rebuilt client is picked up at once.
func Files(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Clean("/" + r.URL.Path)
		local := filepath.Join(dir, filepath.FromSlash(name))
		w.Header().Set("Cache-Control", "no-cache")
		if name == "/favicon.ico" && !fileExists(local) {
			w.Header().Set("Content-Type", "image/x-icon")
			w.Write(favicon)
			return
		}
		ctype := mime.TypeByExtension(path.Ext(name))
		if path.Ext(name) == ".wasm" {
			ctype = "application/wasm"
		}
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.Header().Add("Vary", "Accept-Encoding")
		if ext := path.Ext(name); ext != ".gz" && ext != ".br" {
			for _, enc := range encodings {
				if !accepts(r, enc.coding) {
					continue
				}
				if st, err := os.Stat(local + enc.ext); err == nil && st.Mode().IsRegular() {
					if full, err := os.Stat(local); err == nil {
						// The loader's progress bar counts decoded bytes.
						w.Header().Set(DecodedLengthHeader, strconv.FormatInt(full.Size(), 10))
					}
					w.Header().Set("Content-Encoding", enc.coding)
					http.ServeFile(w, r, local+enc.ext)
					return
				}
			}
		}
		files.ServeHTTP(w, r)
	})
}

// encodings are the compressed copies Files looks for, best first.
var encodings = []struct{ coding, ext string }{{"br", ".br"}, {"gzip", ".gz"}}

// accepts reports whether a request's Accept-Encoding takes coding, by
// name or by *, and does not refuse it with q=0.
func accepts(r *http.Request, coding string) bool {
	star := false
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		c, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		c = strings.TrimSpace(c)
		ok := true
		if _, q, found := strings.Cut(strings.ReplaceAll(params, " ", ""), "q="); found {
			v, err := strconv.ParseFloat(q, 64)
			ok = err == nil && v > 0
		}
		switch {
		case strings.EqualFold(c, coding):
			return ok
		case c == "*":
			star = ok
		}
	}
	return star
}
