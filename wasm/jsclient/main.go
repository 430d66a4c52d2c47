//go:build js && wasm

// Command jsclient is the tongbu client for pages that are not Ebiten: it
// installs the JavaScript API of package wasm as window.tongbu and waits.
package main

import (
	"syscall/js"

	"github.com/tongbu/tongbu/wasm"
)

func main() {
	wasm.Expose("tongbu")
	if cb := js.Global().Get("onTongbuReady"); cb.Type() == js.TypeFunction {
		cb.Invoke()
	}
	select {}
}
