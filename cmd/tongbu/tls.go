//go:build !js

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/transport"
)

// tlsConfig is the config file's "tls" object: a certificate and key in
// PEM files (a certbot or a load balancer's export), reloaded when they
// change.
type tlsConfig struct {
	Cert string `json:"cert"` // certificate chain, PEM
	Key  string `json:"key"`  // private key, PEM
}

// acmeConfig is the config file's "acme" object: certificates from an
// ACME authority (Let's Encrypt by default) for the names listed.
type acmeConfig struct {
	Domains   []string `json:"domains"`   // names to get certificates for; the only ones served
	Email     string   `json:"email"`     // contact for the authority (expiry notices), optional
	Cache     string   `json:"cache"`     // directory keeping the account and certificates (default: the user's cache dir)
	Directory string   `json:"directory"` // the authority's directory URL (default Let's Encrypt's)
	HTTP      string   `json:"http"`      // address answering http-01 challenges and redirecting to https (default ":80", "off": none)
}

// on reports whether the config asks for HTTPS.
func (t tlsConfig) on() bool { return t.Cert != "" || t.Key != "" }

// on reports whether the config asks for ACME certificates.
func (a acmeConfig) on() bool { return len(a.Domains) > 0 }

// tlsFlags are serve's flags for HTTPS; they override the config file.
type tlsFlags struct {
	cert, key, domains, email, cache, directory, http *string
}

func newTLSFlags(fs *flag.FlagSet) tlsFlags {
	return tlsFlags{
		cert:      fs.String("tls-cert", "", "serve HTTPS with this certificate chain (PEM; reloaded when it changes)"),
		key:       fs.String("tls-key", "", "the private key of -tls-cert (PEM)"),
		domains:   fs.String("acme-domains", "", "serve HTTPS with certificates from Let's Encrypt for these comma-separated names (the HTTP address should be :443)"),
		email:     fs.String("acme-email", "", "contact address given to the ACME authority"),
		cache:     fs.String("acme-cache", "", "directory keeping ACME certificates and the account key (default: the user's cache directory)"),
		directory: fs.String("acme-directory", "", "ACME directory URL (default Let's Encrypt's production one)"),
		http:      fs.String("acme-http", "", "address answering ACME http-01 challenges and redirecting to https (default :80; off: none)"),
	}
}

// apply lays the flags over the config file's values and checks them.
func (f tlsFlags) apply(t *tlsConfig, a *acmeConfig) error {
	t.Cert = firstNonEmpty(*f.cert, t.Cert)
	t.Key = firstNonEmpty(*f.key, t.Key)
	if *f.domains != "" {
		a.Domains = strings.Split(*f.domains, ",")
	}
	a.Email = firstNonEmpty(*f.email, a.Email)
	a.Cache = firstNonEmpty(*f.cache, a.Cache)
	a.Directory = firstNonEmpty(*f.directory, a.Directory)
	a.HTTP = firstNonEmpty(*f.http, a.HTTP)
	switch {
	case t.on() && (t.Cert == "" || t.Key == ""):
		return errors.New("HTTPS needs both a certificate and its key (-tls-cert and -tls-key)")
	case t.on() && a.on():
		return errors.New("choose one source of certificates: -tls-cert/-tls-key or -acme-domains")
	}
	for i, d := range a.Domains {
		d = strings.TrimSpace(d)
		if d == "" || !strings.Contains(strings.Trim(d, "."), ".") || net.ParseIP(d) != nil {
			return fmt.Errorf("acme domain %q: want a DNS name such as game.example.com (an ACME authority signs no address or single-label name)", d)
		}
		a.Domains[i] = d
	}
	return nil
}

// serverTLS returns the HTTPS configuration the config asks for (nil for
// plain HTTP) and, for ACME, the handler of http-01 challenges.
func serverTLS(t tlsConfig, a acmeConfig, log *slog.Logger) (*tls.Config, http.Handler, error) {
	switch {
	case t.on():
		kp := &keyPair{certFile: t.Cert, keyFile: t.Key, log: log}
		if err := kp.load(); err != nil {
			return nil, nil, err
		}
		return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.get}, nil, nil
	case a.on():
		cache := a.Cache
		if cache == "" {
			dir, err := os.UserCacheDir()
			if err != nil {
				return nil, nil, fmt.Errorf("acme: no cache directory (set -acme-cache): %v", err)
			}
			cache = filepath.Join(dir, "tongbu", "acme")
		}
		if err := os.MkdirAll(cache, 0o700); err != nil {
			return nil, nil, fmt.Errorf("acme cache: %v", err)
		}
		m := &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			HostPolicy: autocert.HostWhitelist(a.Domains...),
			Cache:      autocert.DirCache(cache),
			Email:      a.Email,
		}
		m.Client = &acme.Client{DirectoryURL: a.Directory, HTTPClient: &http.Client{Transport: &orderLocations{next: http.DefaultTransport}}}
		cfg := m.TLSConfig()
		cfg.MinVersion = tls.VersionTLS12
		return cfg, m.HTTPHandler(nil), nil
	}
	return nil, nil, nil
}

// orderLocations gives an ACME authority's answer to an order's
// finalization the order's URL as its Location when the authority leaves
// it out, as RFC 8555 allows (Pebble, and authorities that finalize
// asynchronously): x/crypto/acme before v0.58 needs it to poll the order
// (golang/go#77704). It learns each order's URL from the answer that
// created it, which names the order's finalize URL. Drop it when the
// module can require x/crypto v0.58 (which needs Go 1.26).
type orderLocations struct {
	next http.RoundTripper
	mu   sync.Mutex
	urls map[string]string // finalize URL -> order URL
}

func (o *orderLocations) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || resp.StatusCode/100 != 2 {
		return resp, err
	}
	loc := resp.Header.Get("Location")
	o.mu.Lock()
	defer o.mu.Unlock()
	if order, ok := o.urls[req.URL.String()]; ok && loc == "" {
		resp.Header.Set("Location", order)
		return resp, nil
	}
	if loc == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, nil
	}
	var v struct {
		Finalize string `json:"finalize"`
	}
	if json.Unmarshal(body, &v) == nil && v.Finalize != "" {
		if o.urls == nil || len(o.urls) > 1024 { // a long-running server's orders: forget the old
			o.urls = map[string]string{}
		}
		o.urls[v.Finalize] = loc
	}
	return resp, nil
}

// keyPair serves a certificate from PEM files and reads them again when
// they change (a renewal), checking at most every keyPairCheck: a server
// that runs for months keeps serving valid certificates.
type keyPair struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	mod     time.Time // the newer of the two files' modification times
	checked time.Time
}

// keyPairCheck is how often keyPair looks at its files.
const keyPairCheck = 10 * time.Second

func (k *keyPair) modTime() (time.Time, error) {
	var newest time.Time
	for _, f := range []string{k.certFile, k.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return newest, err
		}
		if st.ModTime().After(newest) {
			newest = st.ModTime()
		}
	}
	return newest, nil
}

// load reads the files.
func (k *keyPair) load() error {
	mod, err := k.modTime()
	if err != nil {
		return fmt.Errorf("tls: %v", err)
	}
	c, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return fmt.Errorf("tls: %s and %s: %v", k.certFile, k.keyFile, err)
	}
	k.mu.Lock()
	k.cert, k.mod, k.checked = &c, mod, time.Now()
	k.mu.Unlock()
	return nil
}

// get is tls.Config.GetCertificate: the current certificate, read again
// first if the files changed. A renewal that cannot be read is logged and
// the previous certificate kept.
func (k *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	stale := time.Since(k.checked) >= keyPairCheck
	if stale {
		k.checked = time.Now()
	}
	cert, mod := k.cert, k.mod
	k.mu.Unlock()
	if stale {
		if m, err := k.modTime(); err == nil && !m.Equal(mod) {
			if err := k.load(); err != nil {
				k.log.Warn("tls: keeping the previous certificate", "err", err)
			} else {
				k.log.Info("tls: certificate reloaded", "cert", k.certFile)
				k.mu.Lock()
				cert = k.cert
				k.mu.Unlock()
			}
		}
	}
	return cert, nil
}

// serveACMEHTTP answers http-01 challenges (and redirects browsers to
// https) on addr until ctx ends; addr "off" serves nothing.
func serveACMEHTTP(ctx context.Context, addr string, h http.Handler, lc transport.ListenerConfig) (string, error) {
	if h == nil || addr == "off" {
		return "", nil
	}
	ln, err := listenBounded(firstNonEmpty(addr, ":80"), lc)
	if err != nil {
		return "", fmt.Errorf("acme: %v (http-01 challenges come to port 80: run with the right to bind it, or set -acme-http off and serve on :443 for tls-alpn-01)", err)
	}
	hs := engine.HTTPServer("", h)
	go hs.Serve(ln)
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	return ln.Addr().String(), nil
}
