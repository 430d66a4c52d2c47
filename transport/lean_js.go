//go:build js

package transport

import (
	"context"
	"net/http"
)

// leanNative is false in the browser: the browser's own stack serves, and
// ClientConfig.Stack is ignored there.
const leanNative = false

// dialLean is never called in the browser.
func dialLean(context.Context, string, *ClientConfig, Limits, *http.Client, int64) (Conn, error) {
	return nil, ErrClosed
}
