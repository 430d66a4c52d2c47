//go:build !js && !race

package wasm

// raceBuild: this binary runs under the race detector (tests), where the
// compressors run ten times slower than they do in a server.
const raceBuild = false
