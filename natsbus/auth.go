//go:build !js

package natsbus

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

// Auth says how a process proves itself to the NATS server, and how it
// checks the server, in the ways nats.go names: a credentials file (a
// user JWT and its nkey seed, for an operator-mode server), an nkey seed,
// a user and password, or a token; and TLS with the server's CA and,
// when the server asks for one, a client certificate. A cluster's NATS
// server must admit only the cluster's own processes, each with the
// subjects of its role (examples/serve/nats.conf): players never reach it.
type Auth struct {
	// Creds is a .creds file: nats.UserCredentials.
	Creds string
	// NKey is a file holding an nkey seed ("SU..."): nats.Nkey.
	NKey string
	// User and Password: nats.UserInfo.
	User, Password string
	// Token: nats.Token.
	Token string
	// CA is a PEM file of the certificates the server's is checked
	// against (nats.RootCAs): the connection then needs TLS.
	CA string
	// Cert and Key are PEM files of a client certificate, for a server
	// that verifies its clients' (nats.ClientCert).
	Cert, Key string
}

// Options returns the nats.Options of a, for nats.Connect or Dial. It
// checks that a names one way to authenticate at most and that its files
// can be read, so that a mistake is told at start, not at the first
// reconnect.
func (a Auth) Options() ([]nats.Option, error) {
	ways := 0
	for _, s := range []string{a.Creds, a.NKey, a.User, a.Token} {
		if s != "" {
			ways++
		}
	}
	switch {
	case ways > 1:
		return nil, errors.New("natsbus: name one of a credentials file, an nkey seed, a user or a token")
	case a.Password != "" && a.User == "":
		return nil, errors.New("natsbus: a NATS password without a user")
	case (a.Cert == "") != (a.Key == ""):
		return nil, errors.New("natsbus: a client certificate needs both its certificate and its key")
	}
	for _, f := range []string{a.Creds, a.NKey, a.CA, a.Cert, a.Key} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("natsbus: %w", err)
		}
	}
	var opts []nats.Option
	switch {
	case a.Creds != "":
		opts = append(opts, nats.UserCredentials(a.Creds))
	case a.NKey != "":
		o, err := nats.NkeyOptionFromSeed(a.NKey)
		if err != nil {
			return nil, fmt.Errorf("natsbus: nkey seed %s: %w", a.NKey, err)
		}
		opts = append(opts, o)
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	}
	if a.CA != "" {
		opts = append(opts, nats.RootCAs(a.CA))
	}
	if a.Cert != "" {
		opts = append(opts, nats.ClientCert(a.Cert, a.Key))
	}
	return opts, nil
}
