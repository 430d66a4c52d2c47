//go:build !js

package serve_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"
)

// freePort returns a loopback port free a moment ago, for the servers
// whose configuration must name their ports before they start.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// freeUDPPort is freePort for a DNS server, which listens on both.
func freeUDPPort(t *testing.T) string {
	t.Helper()
	for range 20 {
		port := freePort(t)
		if c, err := net.ListenPacket("udp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return port
		}
	}
	t.Fatal("no free UDP port")
	return ""
}

// TestServeACME gets `tongbu serve -acme-domains` its certificate from a
// real ACME authority: Pebble, Let's Encrypt's test server, on loopback,
// with a DNS server that points the game's name at 127.0.0.1. Pebble
// checks the challenge against the serving process as Let's Encrypt
// would; the certificate it issues is then the one a client sees, and
// a name not listed gets none.
func TestServeACME(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "pebble"), "github.com/letsencrypt/pebble/v2/cmd/pebble").CombinedOutput()
	if err != nil {
		t.Fatalf("go build pebble: %v\n%s", err, out)
	}
	ca := newTestCA(t)
	pebbleCert, pebbleKey, _ := ca.issue(t, dir)
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, ca.pem, 0o644)

	dnsPort := freeUDPPort(t)
	dns, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{"127.0.0.1:" + dnsPort}, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	dns.SetDefaultDNSIPv4("127.0.0.1") // every name is this machine
	dns.SetDefaultDNSIPv6("")
	dns.Run()
	defer dns.Shutdown()

	acmePort, mgmtPort, httpsPort, challengePort := freePort(t), freePort(t), freePort(t), freePort(t)
	conf, _ := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress":           "127.0.0.1:" + acmePort,
		"managementListenAddress": "127.0.0.1:" + mgmtPort,
		"certificate":             pebbleCert, "privateKey": pebbleKey,
		"httpPort": atoi(t, challengePort), "tlsPort": atoi(t, httpsPort),
		"externalAccountBindingRequired": false,
		"profiles":                       map[string]any{"default": map[string]any{"description": "test", "validityPeriod": 86400}},
	}})
	confFile := filepath.Join(dir, "pebble.json")
	os.WriteFile(confFile, conf, 0o644)
	pebble := exec.Command(filepath.Join(dir, "pebble"), "-config", confFile, "-dnsserver", "127.0.0.1:"+dnsPort)
	pebble.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	pebbleLog := &lockedBuffer{}
	pebble.Stdout, pebble.Stderr = pebbleLog, pebbleLog
	if err := pebble.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		pebble.Process.Kill()
		pebble.Wait()
		if t.Failed() {
			t.Logf("pebble:\n%s", pebbleLog.String())
		}
	}()
	trustCA := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool()}}}
	var roots *x509.CertPool
	waitUntil(t, "pebble's root certificate", func() bool {
		resp, err := trustCA.Get("https://127.0.0.1:" + mgmtPort + "/roots/0")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		roots = x509.NewCertPool()
		return resp.StatusCode == 200 && roots.AppendCertsFromPEM(b)
	})

	const name = "eu-1.tongbu.test"
	t.Setenv("SSL_CERT_FILE", caFile) // the serving process trusts Pebble's directory
	p := startServeWith(t, "0123456789abcdef0123", "acme", "-http", "127.0.0.1:"+httpsPort, "-rooms", "1",
		"-acme-domains", name, "-acme-directory", "https://127.0.0.1:"+acmePort+"/dir",
		"-acme-cache", filepath.Join(dir, "acme"), "-acme-http", "127.0.0.1:"+challengePort)
	if !strings.HasPrefix(p.url, "https://") {
		t.Fatalf("serve printed %s, want https", p.url)
	}

	// The first handshake for the name gets the certificate: Pebble
	// validates the challenge against the process, then signs.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+httpsPort)
		},
	}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+name+"/healthz", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("https://%s with Pebble's root: %v\nserve:\n%s", name, err, p.stderr.String())
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.PeerCertificates[0].DNSNames[0] != name {
		t.Fatalf("status %d, TLS %+v", resp.StatusCode, resp.TLS)
	}

	// A name the server was not told to serve gets no certificate.
	c, err := tls.Dial("tcp", "127.0.0.1:"+httpsPort, &tls.Config{ServerName: "other.tongbu.test", RootCAs: roots})
	if err == nil {
		c.Close()
		t.Fatal("a certificate for a name not in -acme-domains")
	}

	// The challenge port sends a browser to https.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ = http.NewRequest(http.MethodGet, "http://127.0.0.1:"+challengePort+"/play", nil)
	req.Host = name
	resp, err = noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || loc != "https://"+name+"/play" {
		t.Fatalf("http on the challenge port: %d to %q, want a redirect to https://%s/play", resp.StatusCode, loc, name)
	}
}

func atoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
