//go:build js

// The benchmarks run servers and bots: they need a native build. This file
// keeps `GOOS=js go vet ./...` meaningful for the rest of the module.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "tongbu-bench: needs a native build")
	os.Exit(2)
}
