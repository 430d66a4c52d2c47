//go:build !linux

package bots

import "errors"

// renice: only Linux's nice is wired up.
func renice(n int) error {
	if n == 0 {
		return nil
	}
	return errors.New("renice: only on Linux")
}
