//go:build js

// The tongbu tool runs a server and builds browser clients: it needs a
// native build. This file keeps `GOOS=js go vet ./...` meaningful for the
// rest of the module.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "tongbu: the tool needs a native build (go run ./cmd/tongbu)")
	os.Exit(2)
}
