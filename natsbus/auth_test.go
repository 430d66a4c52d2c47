//go:build !js

package natsbus

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAuthOptions: one way to authenticate at most, files that exist, a
// password with its user and a key with its certificate; the options
// follow what is given.
func TestAuthOptions(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "node.creds")
	os.WriteFile(creds, []byte("-----BEGIN NATS USER JWT-----\n"), 0o600)
	for _, tc := range []struct {
		name string
		a    Auth
		n    int
		ok   bool
	}{
		{"nothing", Auth{}, 0, true},
		{"a user", Auth{User: "node", Password: "pw"}, 1, true},
		{"a token", Auth{Token: "t"}, 1, true},
		{"a credentials file and a CA", Auth{Creds: creds, CA: creds}, 2, true},
		{"two ways", Auth{User: "node", Token: "t"}, 0, false},
		{"a password alone", Auth{Password: "pw"}, 0, false},
		{"a certificate without its key", Auth{Cert: creds}, 0, false},
		{"a file that is not there", Auth{Creds: filepath.Join(dir, "missing.creds")}, 0, false},
		{"an nkey seed that is not one", Auth{NKey: creds}, 0, false},
	} {
		opts, err := tc.a.Options()
		if (err == nil) != tc.ok || len(opts) != tc.n {
			t.Errorf("%s: %d options, %v", tc.name, len(opts), err)
		}
	}
}
