//go:build !unix && !js

package lean

import "syscall"

// tryWrite writes nothing here: the writer goroutine writes it all.
func tryWrite(syscall.RawConn, []byte) (int, error) { return 0, nil }
