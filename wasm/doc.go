// Package wasm is the browser half of tongbu: the syscall/js glue that starts
// the Go client in a page, a small JavaScript API (connect, status, stats)
// for pages that are not Ebiten, and the page assets. Client logic itself
// lives in the mode packages and in engine, shared with native clients.
//
// The package is laid out but not built yet: it lands with the engine issue.
package wasm
