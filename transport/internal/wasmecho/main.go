//go:build js && wasm

// Command wasmecho is the browser half of the transport's browser test: it
// dials the page's signaling URL with transport.Dial (pion wrapping the
// browser's RTCPeerConnection), sends numbered messages on both channels,
// checks the server's echoes and reports in window.tongbuResult.
package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"syscall/js"
	"time"

	"github.com/tongbu/tongbu/transport"
)

func main() {
	js.Global().Set("tongbuResult", run())
	select {} // keep the module alive for the page
}

func run() string {
	url := js.Global().Get("location").Get("origin").String() + "/signal"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, url, nil)
	if err != nil {
		return "error: dial: " + err.Error()
	}
	defer c.Close()
	const n = 100
	msg := make([]byte, 64)
	for i := range n {
		binary.LittleEndian.PutUint32(msg, uint32(i))
		if err := c.SendReliable(msg); err != nil {
			return "error: reliable send: " + err.Error()
		}
		if err := c.SendUnreliable(msg); err != nil {
			return "error: unreliable send: " + err.Error()
		}
	}
	rel, unrel := 0, 0
	for rel < n {
		m, err := c.Receive(ctx)
		if err != nil {
			return fmt.Sprintf("error: after %d reliable and %d unreliable echoes: %v", rel, unrel, err)
		}
		v := binary.LittleEndian.Uint32(m.Data)
		switch m.Channel {
		case transport.Reliable:
			if v != uint32(rel) {
				return fmt.Sprintf("error: reliable echo %d arrived as %d", rel, v)
			}
			rel++
		case transport.Unreliable:
			unrel++
		}
	}
	// Unreliable echoes may trail the reliable ones; give them a moment.
	deadline, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	for unrel < n {
		m, err := c.Receive(deadline)
		if err != nil {
			break
		}
		if m.Channel == transport.Unreliable {
			unrel++
		}
	}
	return fmt.Sprintf("ok reliable=%d unreliable=%d", rel, unrel)
}
