//go:build !js

package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestErrorsCarryTheStack: errors from the transport's exported functions
// show, with %+v, the call that returned them, and still match their
// sentinels (memnet.TestClosedSendIsBare holds a connection's sends to
// the bare sentinel: they are on the data path).
func TestErrorsCarryTheStack(t *testing.T) {
	_, err := NewServer(ServerConfig{UDPAddr: "256.0.0.1:1"})
	if err == nil || !strings.Contains(fmt.Sprintf("%+v", err), "errors_test.go:") {
		t.Fatalf("NewServer on a bad address: %+v", err)
	}
	s := newTestServer(t, ServerConfig{})
	s.Close()
	_, err = s.Accept(context.Background())
	if !errors.Is(err, ErrClosed) || !strings.Contains(fmt.Sprintf("%+v", err), "errors_test.go:") {
		t.Fatalf("Accept after Close: %+v", err)
	}
	_, err = Dial(context.Background(), "http://"+s.UDPAddr().String()+"/nothing-here", &ClientConfig{IncludeLoopback: true})
	if err == nil || !strings.Contains(fmt.Sprintf("%+v", err), "errors_test.go:") {
		t.Fatalf("Dial to no signaling server: %+v", err)
	}
}
