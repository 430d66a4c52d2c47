//go:build js

package main

import (
	"errors"
	"io"
)

func runBots([]string, io.Writer) error { return errors.New("the transport bots need a native build") }
