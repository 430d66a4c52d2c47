//go:build !js

// Package natstest starts a NATS server inside a test, on a random
// loopback port. Only tests import it: it is the one package of the module
// that may depend on github.com/nats-io/nats-server.
package natstest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
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

// Cluster starts a NATS cluster of n servers with JetStream (each store
// in a temporary directory of tb), on random loopback ports, shut down
// when tb ends, and returns it once its JetStream has a leader: what a
// production cluster of tongbu runs on, for tests that kill one of its
// servers.
func Cluster(tb testing.TB, n int) []*server.Server {
	tb.Helper()
	// The stores first: cleanups run last first, so the servers stop
	// before their directories are removed.
	stores := make([]string, n)
	for i := range stores {
		stores[i] = tb.TempDir()
	}
	servers := make([]*server.Server, 0, n)
	tb.Cleanup(func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	// The cluster ports are picked ahead, for each server's routes to
	// name all three.
	routes := make([]*url.URL, n)
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	for i := range n {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("nats-%d", i+1), Host: "127.0.0.1", Port: -1, NoLog: os.Getenv("NATSTEST_LOG") == "", NoSigs: true,
			JetStream: true, StoreDir: stores[i],
			Cluster: server.ClusterOpts{Name: "tongbu-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		})
		if err != nil {
			tb.Fatal(err)
		}
		if os.Getenv("NATSTEST_LOG") != "" {
			s.ConfigureLogger()
		}
		go s.Start()
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(20 * time.Second) {
			tb.Fatal("natstest: NATS server of the cluster not ready in 20 s")
		}
	}
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		leader, current := false, true
		for _, s := range servers {
			leader = leader || s.JetStreamIsLeader()
			current = current && s.JetStreamIsCurrent() && s.NumRoutes() >= n-1
		}
		if leader && current {
			return servers
		}
		if time.Now().After(end) {
			tb.Fatal("natstest: the NATS cluster's JetStream has no leader after 20 s")
		}
	}
}

// URLs is the client URLs of servers, comma-separated, as nats.Connect
// and `tongbu serve -nats` take them: a client connects to any and
// reconnects to another when its server dies.
func URLs(servers []*server.Server) string {
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}
