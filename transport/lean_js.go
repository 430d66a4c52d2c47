//go:build js

package transport

import (
	"context"
	"net/http"
)

// dialLeanNative: in the browser the browser's own stack serves.
func dialLeanNative(context.Context, string, *ClientConfig, Limits, *http.Client, int64) (Conn, error, bool) {
	return nil, nil, false
}
