//go:build !linux && !js

package loss

import (
	"errors"
	"io"
	"time"
)

func benchLossTCP(io.Writer, int, time.Duration, float64) error {
	return errors.New("-transport webrtc-tcp needs Linux network namespaces")
}
