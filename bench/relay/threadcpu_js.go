//go:build js

package relay

import "time"

// threadCPU is not measured in the browser: the relay bench runs natively.
func threadCPU() time.Duration { return 0 }
