//go:build js

package reconnect

import (
	"errors"
	"io"
)

func benchResume(io.Writer, int) error { return errors.New("-resume needs a native build") }
