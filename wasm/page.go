package wasm

import (
	"bytes"
	_ "embed"
	"html/template"
)

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

// Page returns the loader page for a WASM file: it loads wasm_exec.js from
// the same directory, starts wasmFile (a URL relative to the page) and
// shows its progress and any error. The page's query string reaches the
// program through location.search.
func Page(title, wasmFile string) []byte {
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, struct{ Title, Wasm string }{title, wasmFile}); err != nil {
		panic(err) // the template and its two strings cannot fail
	}
	return b.Bytes()
}
