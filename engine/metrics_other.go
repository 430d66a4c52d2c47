//go:build !unix && !js

package engine

import "time"

// processCPU is not known here.
func processCPU() (time.Duration, bool) { return 0, false }

// maxFDs is not known here.
func maxFDs() (uint64, bool) { return 0, false }
