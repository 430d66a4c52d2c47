//go:build !js

package serve_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/wasm"
)

// testCA is a certificate authority a test makes, and a browser or a Go
// client is told to trust.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tongbu test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// spki is the base64 SHA-256 of the CA's public key, as Chromium's
// --ignore-certificate-errors-spki-list takes it.
func (ca *testCA) spki() string {
	h := sha256.Sum256(ca.cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(h[:])
}

// pool is a pool holding the CA alone.
func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// issue signs a server certificate for 127.0.0.1 and localhost and
// writes it (with the CA after it) and its key to dir.
func (ca *testCA) issue(t *testing.T, dir string) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.pem...)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	certFile, keyFile = filepath.Join(dir, "fullchain.pem"), filepath.Join(dir, "privkey.pem")
	if err := os.WriteFile(certFile, chain, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err = tls.X509KeyPair(chain, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pair
}

// TestServeHTTPSInBrowser deploys as a game does: the game's page on one
// https origin, `tongbu serve -tls-cert -tls-key` on another, a
// certificate from a CA the browser trusts. Headless Chromium loads the
// page, which connects to the relay over https (an http signaling URL
// would be mixed content, blocked) and plays in a room.
func TestServeHTTPSInBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ca := newTestCA(t)
	certFile, keyFile, pair := ca.issue(t, dir)
	if err := wasm.Build(ctx, dir, "jsclient.wasm", "github.com/tongbu/tongbu/wasm/jsclient"); err != nil {
		t.Fatal(err)
	}
	pages := httptest.NewUnstartedServer(http.FileServer(http.Dir(dir)))
	pages.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	pages.StartTLS()
	defer pages.Close()

	const secret = "0123456789abcdef0123"
	p := startServeWith(t, secret, "https", "-tls-cert", certFile, "-tls-key", keyFile, "-rooms", "1", "-origins", pages.URL)
	if !strings.HasPrefix(p.url, "https://") {
		t.Fatalf("serve printed %s, want an https URL", p.url)
	}
	// A Go client checks the certificate as a browser does.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool()}}}
	resp, err := hc.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	ticket, err := engine.SignTicket([]byte(secret), engine.Ticket{Player: "page", Target: "room-1", Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(string(wasm.Page("https", "jsclient.wasm")), "</body>", fmt.Sprintf(`<script>
window.onTongbuReady = async () => {
  try { window.mode = await tongbu.connect(%q, %q); } catch (e) { window.failed = String(e); }
  setInterval(() => tongbu.input(new Uint8Array([7])), 66);
};
</script></body>`, p.url, ticket), 1)
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}

	bctx, stop, err := browser.New(ctx, "", chromedp.Flag("ignore-certificate-errors-spki-list", ca.spki()))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var ok bool
	if err := chromedp.Run(bctx, chromedp.Navigate(pages.URL+"/index.html"),
		chromedp.Poll(`window.failed || (window.mode === "lockstep" && tongbu.stats().recvMessages > 30)`, &ok, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		t.Fatal(err)
	}
	var failed, proto string
	chromedp.Run(bctx, chromedp.Evaluate(`window.failed || ""`, &failed), chromedp.Evaluate(`location.protocol`, &proto))
	if failed != "" || proto != "https:" {
		t.Fatalf("page on %s: connect failed: %s", proto, failed)
	}
	var frames struct{ Frame int }
	chromedp.Run(bctx, chromedp.Evaluate(`tongbu.status()`, &frames))
	if frames.Frame == 0 {
		t.Fatalf("connected over https but no frame came: %+v", frames)
	}
	// A refusal's reason reaches a page on another origin.
	var refused string
	if err := chromedp.Run(bctx, chromedp.Evaluate(fmt.Sprintf(`tongbu.close(), tongbu.connect(%q, "not-a-ticket").then(() => "connected", e => String(e))`, p.url), &refused,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(refused, "(ticket_invalid)") {
		t.Fatalf("a bad ticket: the page saw %q, want the reason ticket_invalid", refused)
	}
}
