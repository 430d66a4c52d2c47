//go:build !js

package wasm_test

import (
	"strings"
	"testing"

	"github.com/tongbu/tongbu/wasm"
)

func TestPage(t *testing.T) {
	p := string(wasm.Page(`a <b> "game"`, "game.wasm"))
	for _, want := range []string{`<title>a &lt;b&gt; &#34;game&#34;</title>`, `src="wasm_exec.js"`, `fetch("game.wasm")`} {
		if !strings.Contains(p, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}
