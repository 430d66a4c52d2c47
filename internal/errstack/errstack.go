// Package errstack records where an error crossed into a game server's
// code: the library's exported functions return their errors through
// With, so that %+v in a server's log shows the stack, while errors.Is
// and errors.As still see the sentinels and types inside.
package errstack

import (
	stderrors "errors"

	"github.com/pkg/errors"
)

// stackTracer is what github.com/pkg/errors' errors carry.
type stackTracer interface{ StackTrace() errors.StackTrace }

// With returns err with the caller's stack, or err itself when it is nil
// or carries a stack already (an error that came through another
// exported function of the library).
func With(err error) error {
	if err == nil {
		return nil
	}
	var st stackTracer
	if stderrors.As(err, &st) {
		return err
	}
	return errors.WithStack(err)
}

// Wrapf returns err with a message before it and the caller's stack; nil
// for a nil err.
func Wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var st stackTracer
	if stderrors.As(err, &st) {
		return errors.WithMessagef(err, format, args...)
	}
	return errors.Wrapf(err, format, args...)
}
