//go:build !js

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/natsbus"
)

// natsAuth is how a process of the cluster proves itself to the NATS
// server and checks it, and where the cluster's secret is: part of the
// serve config's "cluster" object, and flags of serve and matchmaker.
// The password and the token come from the environment
// ($TONGBU_NATS_PASSWORD, $TONGBU_NATS_TOKEN), never from a file that is
// often shared.
type natsAuth struct {
	Creds string `json:"nats_creds"` // a .creds file (operator mode)
	NKey  string `json:"nats_nkey"`  // a file holding an nkey seed
	User  string `json:"nats_user"`  // with $TONGBU_NATS_PASSWORD
	CA    string `json:"nats_ca"`    // the NATS server's CA (PEM): TLS
	Cert  string `json:"nats_cert"`  // a client certificate (PEM), for a server that asks for one
	Key   string `json:"nats_key"`   // its key
	// SecretFile holds the cluster's secret, which seals every message
	// on NATS (cluster.Options.Secret); default $TONGBU_CLUSTER_SECRET,
	// else the ticket secret.
	SecretFile string `json:"secret_file"`
}

// natsAuthFlags are natsAuth's flags.
type natsAuthFlags struct {
	creds, nkey, user, ca, cert, key, secret *string
}

func newNATSAuthFlags(fs *flag.FlagSet) *natsAuthFlags {
	return &natsAuthFlags{
		creds:  fs.String("nats-creds", "", "NATS credentials file (JWT and nkey seed) the process connects with"),
		nkey:   fs.String("nats-nkey", "", "file holding the NATS nkey seed the process connects with"),
		user:   fs.String("nats-user", "", "NATS user the process connects as (password in $TONGBU_NATS_PASSWORD; a token instead: $TONGBU_NATS_TOKEN)"),
		ca:     fs.String("nats-ca", "", "PEM file of the CA that signed the NATS server's certificate (connects over TLS)"),
		cert:   fs.String("nats-cert", "", "PEM client certificate for a NATS server that verifies its clients"),
		key:    fs.String("nats-key", "", "the client certificate's key"),
		secret: fs.String("cluster-secret-file", "", "file holding the cluster's secret, which seals every message on NATS (default $TONGBU_CLUSTER_SECRET, else the ticket secret)"),
	}
}

// apply lets the flags override a.
func (f *natsAuthFlags) apply(a *natsAuth) {
	a.Creds = firstNonEmpty(*f.creds, a.Creds)
	a.NKey = firstNonEmpty(*f.nkey, a.NKey)
	a.User = firstNonEmpty(*f.user, a.User)
	a.CA = firstNonEmpty(*f.ca, a.CA)
	a.Cert = firstNonEmpty(*f.cert, a.Cert)
	a.Key = firstNonEmpty(*f.key, a.Key)
	a.SecretFile = firstNonEmpty(*f.secret, a.SecretFile)
}

// options returns the nats.Options of a, with the password and token of
// the environment.
func (a natsAuth) options() ([]nats.Option, error) {
	return natsbus.Auth{Creds: a.Creds, NKey: a.NKey, User: a.User, Password: os.Getenv("TONGBU_NATS_PASSWORD"),
		Token: os.Getenv("TONGBU_NATS_TOKEN"), CA: a.CA, Cert: a.Cert, Key: a.Key}.Options()
}

// natsStartWait is how long a process started beside its NATS server
// (a compose file, or the README's commands in one go) waits for it to
// listen before it gives up.
const natsStartWait = 5 * time.Minute

// connect connects to the NATS server at url as a says, reconnecting for
// ever, the connection named name in the server's monitoring. A server
// not listening yet is waited for, up to natsStartWait or until ctx is
// done (the process told to stop); one that refuses the credentials is an
// error at once.
func (a natsAuth) connect(ctx context.Context, url, name string, log *slog.Logger) (*nats.Conn, error) {
	opts, err := a.options()
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.Name(name), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("NATS disconnected", "err", err) }),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("NATS reconnected") }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS", "subject", subject, "err", err) // a permission refused, a slow consumer
		}))
	nc, err := nats.Connect(url, opts...)
	for deadline, said := time.Now().Add(natsStartWait), false; errors.Is(err, nats.ErrNoServers) && time.Now().Before(deadline); said = true {
		if !said {
			log.Info("waiting for NATS to listen", "url", url, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("NATS %s: stopped while waiting for it: %w", url, err)
		case <-time.After(250 * time.Millisecond):
		}
		nc, err = nats.Connect(url, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("NATS %s: %w", url, err)
	}
	return nc, nil
}

// secret returns the cluster's secret: SecretFile's, else
// $TONGBU_CLUSTER_SECRET, else fallback (the ticket secret, when the
// process has one).
func (a natsAuth) secret(fallback []byte) ([]byte, error) {
	if a.SecretFile != "" {
		b, err := os.ReadFile(a.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("cluster secret: %v", err)
		}
		s := strings.TrimSpace(string(b))
		if len(s) < minSecret {
			return nil, fmt.Errorf("%s holds %d bytes: a cluster secret needs at least %d", a.SecretFile, len(s), minSecret)
		}
		return []byte(s), nil
	}
	if s := os.Getenv("TONGBU_CLUSTER_SECRET"); s != "" {
		if len(s) < minSecret {
			return nil, fmt.Errorf("TONGBU_CLUSTER_SECRET holds %d bytes: a cluster secret needs at least %d", len(s), minSecret)
		}
		return []byte(s), nil
	}
	if len(fallback) >= minSecret {
		return fallback, nil
	}
	return nil, fmt.Errorf("no cluster secret: set TONGBU_CLUSTER_SECRET or pass -cluster-secret-file (at least %d bytes, the same in every process of the cluster)", minSecret)
}
