//go:build linux

// Package netns gives a test a second host on this machine: a Linux
// network namespace joined to the test's own by a veth pair, with its own
// address, and optionally a firewall that drops its UDP (a player's
// network that blocks UDP, or a server reachable only over TCP). The test
// makes listeners inside it with Do; everything else stays in the
// test's namespace. It needs root, iproute2 and, to block UDP, nftables:
// New says which is missing, for the test to skip or fail.
package netns

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is returned by New where namespaces cannot be made: not
// root, or no ip (iproute2) or nft (nftables) command.
var ErrUnavailable = errors.New("netns: network namespaces unavailable")

// NS is a network namespace joined to the caller's by a veth pair.
type NS struct {
	// Name is the namespace's name (ip netns list shows it).
	Name string
	// Host is the address of the pair's end in the caller's namespace;
	// Addr that of the end inside this one.
	Host, Addr netip.Addr
	f          *os.File
	table      string // the nftables table of the host's end, if any
	host, dev  string // the veth ends: in the caller's namespace, in this one
}

var made atomic.Uint32

// Options says what to make of the namespace.
type Options struct {
	// BlockUDP drops every UDP datagram into and out of the namespace.
	BlockUDP bool
	// Loss drops this share (0 to 1) of the packets into and out of the
	// namespace, each way, at random: UDP datagrams and TCP segments
	// alike (kernel netem, which could delay them too, is not here).
	Loss float64
}

// New makes a namespace with a fresh /30 of 10.201.0.0/16 between it and
// the caller's.
func New(opt Options) (*NS, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: not root", ErrUnavailable)
	}
	need := []string{"ip"}
	if opt.BlockUDP || opt.Loss > 0 {
		need = append(need, "nft")
	}
	for _, c := range need {
		if _, err := exec.LookPath(c); err != nil {
			return nil, fmt.Errorf("%w: no %s command (apt-get install iproute2 nftables)", ErrUnavailable, c)
		}
	}
	id := uint32(os.Getpid())%1000*100 + made.Add(1)%100
	block := rand.N(16384)
	n := &NS{Name: fmt.Sprintf("tb%d", id),
		Host: netip.AddrFrom4([4]byte{10, 201, byte(block >> 6), byte(block&63<<2 | 1)}),
		Addr: netip.AddrFrom4([4]byte{10, 201, byte(block >> 6), byte(block&63<<2 | 2)})}
	host, inner := fmt.Sprintf("tbh%d", id), fmt.Sprintf("tbn%d", id)
	n.host, n.dev = host, inner
	steps := [][]string{
		{"ip", "netns", "add", n.Name},
		{"ip", "link", "add", host, "type", "veth", "peer", "name", inner},
		{"ip", "link", "set", inner, "netns", n.Name},
		{"ip", "addr", "add", n.Host.String() + "/30", "dev", host},
		{"ip", "link", "set", host, "up"},
		{"ip", "netns", "exec", n.Name, "ip", "addr", "add", n.Addr.String() + "/30", "dev", inner},
		{"ip", "netns", "exec", n.Name, "ip", "link", "set", inner, "up"},
		{"ip", "netns", "exec", n.Name, "ip", "link", "set", "lo", "up"},
	}
	if opt.BlockUDP || opt.Loss > 0 {
		// Packets are dropped as they arrive at either end of the pair
		// (the ingress hook of each veth), as a network loses them: a
		// drop on the way out would fail the sender's sendto with EPERM,
		// which no real network does.
		var rules []string
		if opt.BlockUDP {
			rules = append(rules, "meta l4proto udp drop")
		}
		if opt.Loss > 0 {
			rules = append(rules, fmt.Sprintf("numgen random mod 10000 < %d drop", int(opt.Loss*10000)))
		}
		chain := func(table, dev string) string {
			s := fmt.Sprintf("add table netdev %[1]s; add chain netdev %[1]s in { type filter hook ingress device %[2]s priority 0; }", table, dev)
			for _, r := range rules {
				s += fmt.Sprintf("; add rule netdev %s in %s", table, r)
			}
			return s
		}
		steps = append(steps,
			[]string{"ip", "netns", "exec", n.Name, "nft", chain("tongbu", inner)},
			[]string{"nft", chain(n.Name, host)})
		n.table = n.Name
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			n.Close()
			return nil, fmt.Errorf("netns: %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	f, err := os.Open("/var/run/netns/" + n.Name)
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("netns: %w", err)
	}
	n.f = f
	return n, nil
}

// Do runs f inside the namespace, on a thread of its own that ends with
// it: the sockets f opens (listeners, a server's UDP socket) belong to
// the namespace, and serve from any goroutine afterwards. Goroutines f
// starts run in the caller's namespace.
func (n *NS) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it ends with this goroutine,
		// and no other goroutine runs in the namespace.
		runtime.LockOSThread()
		if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: setns: %w", err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// Cut takes the namespace's network down (every packet either way is
// dropped, as when a player's Wi-Fi goes) or, with down false, back up.
func (n *NS) Cut(down bool) error {
	inner := []string{"ip", "netns", "exec", n.Name, "nft"}
	outer := []string{"nft"}
	table := func(name, dev string) string {
		return fmt.Sprintf("add table netdev %[1]s; add chain netdev %[1]s in { type filter hook ingress device %[2]s priority -10; }; add rule netdev %[1]s in drop", name, dev)
	}
	steps := [][]string{append(inner, table("tongbucut", n.dev)), append(outer, table(n.Name+"cut", n.host))}
	if !down {
		steps = [][]string{append(inner, "delete table netdev tongbucut"), append(outer, "delete table netdev "+n.Name+"cut")}
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("netns: %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return nil
}

// Close deletes the namespace and its veth pair.
func (n *NS) Close() error {
	if n.f != nil {
		n.f.Close()
	}
	if n.table != "" {
		exec.Command("nft", "delete", "table", "netdev", n.table).Run()
	}
	exec.Command("nft", "delete", "table", "netdev", n.Name+"cut").Run()
	out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns: deleting %s: %v: %s", n.Name, err, out)
	}
	return nil
}

// TB is what ForTest needs of a test (a testing.TB), without linking
// package testing here.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Cleanup(func())
}

// ForTest returns a namespace made with opt for t, and deletes it when t
// ends. Where none can be made, t is skipped with the reason, unless $CI
// is set: CI installs what the namespace needs and runs as root, so
// there the test fails.
func ForTest(t TB, opt Options) *NS {
	t.Helper()
	n, err := New(opt)
	if errors.Is(err, ErrUnavailable) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}
