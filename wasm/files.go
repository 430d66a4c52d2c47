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
// application/wasm, and, to a browser that accepts gzip, the .gz copy
// beside a file in its place (Content-Encoding: gzip), which makes a
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
		if acceptsGzip(r) && !strings.HasSuffix(name, ".gz") {
			if st, err := os.Stat(local + ".gz"); err == nil && st.Mode().IsRegular() {
				if full, err := os.Stat(local); err == nil {
					// The loader's progress bar counts decoded bytes.
					w.Header().Set(DecodedLengthHeader, strconv.FormatInt(full.Size(), 10))
				}
				w.Header().Set("Content-Encoding", "gzip")
				http.ServeFile(w, r, local+".gz")
				return
			}
		}
		files.ServeHTTP(w, r)
	})
}

// acceptsGzip reports whether a request's Accept-Encoding takes gzip
// (and does not refuse it with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") || strings.TrimSpace(coding) == "*" {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
