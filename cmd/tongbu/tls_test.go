//go:build !js

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSelfSigned writes a self-signed certificate for name and its key
// as PEM files in dir and returns their paths.
func writeSelfSigned(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cert, key
}

func leafName(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x.Subject.CommonName
}

// TestKeyPairReloads: a renewed certificate is served once its files
// change; a renewal that cannot be read leaves the previous one served.
func TestKeyPairReloads(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir, "one.example")
	kp := &keyPair{certFile: cert, keyFile: key, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := kp.load(); err != nil {
		t.Fatal(err)
	}
	get := func() string {
		kp.mu.Lock()
		kp.checked = time.Time{} // as if keyPairCheck had passed
		kp.mu.Unlock()
		c, err := kp.get(nil)
		if err != nil {
			t.Fatal(err)
		}
		return leafName(t, c)
	}
	if n := get(); n != "one.example" {
		t.Fatalf("serves %s", n)
	}
	writeSelfSigned(t, dir, "two.example")
	later := time.Now().Add(time.Minute)
	os.Chtimes(cert, later, later)
	if n := get(); n != "two.example" {
		t.Fatalf("after renewal serves %s, want two.example", n)
	}
	os.WriteFile(key, []byte("not a key"), 0o600)
	later = later.Add(time.Minute)
	os.Chtimes(key, later, later)
	if n := get(); n != "two.example" {
		t.Fatalf("after a broken renewal serves %s, want the previous two.example", n)
	}
}

// TestTLSFlags: the HTTPS options a user can get wrong are refused with
// what to do.
func TestTLSFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // "" for accepted
	}{
		{nil, ""},
		{[]string{"-tls-cert", "c.pem", "-tls-key", "k.pem"}, ""},
		{[]string{"-tls-cert", "c.pem"}, "both a certificate and its key"},
		{[]string{"-acme-domains", "eu-1.game.example,eu-2.game.example"}, ""},
		{[]string{"-acme-domains", "localhost"}, "want a DNS name"},
		{[]string{"-acme-domains", "203.0.113.10"}, "want a DNS name"},
		{[]string{"-tls-cert", "c.pem", "-tls-key", "k.pem", "-acme-domains", "a.example"}, "choose one source"},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		tf := newTLSFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		var tc tlsConfig
		var ac acmeConfig
		err := tf.apply(&tc, &ac)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: got %v, want an error saying %q", tt.args, err, tt.want)
		}
	}
}

// TestServeTLSRefusesBadFiles: serve stops at once, saying which files,
// when the certificate cannot be read.
func TestServeTLSRefusesBadFiles(t *testing.T) {
	t.Setenv("TONGBU_SECRET", "0123456789abcdef")
	dir := t.TempDir()
	_, key := writeSelfSigned(t, dir, "one.example")
	var out, errb strings.Builder
	code := serveCommand([]string{"-http", "127.0.0.1:0", "-udp", "0", "-hugepages=false", "-tls-cert", filepath.Join(dir, "missing.pem"), "-tls-key", key}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "missing.pem") {
		t.Fatalf("exit %d, stderr %q: want 2 naming missing.pem", code, errb.String())
	}
}

// TestStrayArgument: a word where a flag was meant stops serve and
// ticket with the word named, instead of every flag after it being
// ignored.
func TestStrayArgument(t *testing.T) {
	t.Setenv("TONGBU_SECRET", "0123456789abcdef")
	for _, tt := range []struct {
		run  func([]string, io.Writer, io.Writer) int
		args []string
	}{
		{serveCommand, []string{"-http", "127.0.0.1:0", "8080", "-udp", "0"}},
		{ticketCommand, []string{"-player", "p", "room-1", "-target", "room-1"}},
	} {
		var out, errb strings.Builder
		if code := tt.run(tt.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unexpected argument") {
			t.Errorf("%v: exit %d, %q", tt.args, code, errb.String())
		}
	}
}
