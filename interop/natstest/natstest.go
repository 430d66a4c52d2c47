//go:build !js

// Package natstest starts a NATS server inside a test, on a random
// loopback port. Only tests import it: it is the one package of the module
// that may depend on github.com/nats-io/nats-server.
package natstest

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Server starts a NATS server (core NATS, no JetStream; see JetStream) on a random
// loopback port, shut down when tb ends, and returns it.
func Server(tb testing.TB) *server.Server {
	tb.Helper()
	s, err := Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Start starts a NATS server on a random loopback port, for an example
// to shut down itself.
func Start() (*server.Server, error) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("natstest: NATS server not ready in 10 s")
	}
	return s, nil
}

// Conn connects to s, closed when tb ends.
func Conn(tb testing.TB, s *server.Server, opts ...nats.Option) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// JetStream starts a NATS server with JetStream (its store in a
// temporary directory of tb) on a random loopback port, shut down when
// tb ends: what the cluster's world checkpoints need.
func JetStream(tb testing.TB) *server.Server {
	tb.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		tb.Fatal("natstest: NATS server not ready in 10 s")
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}
