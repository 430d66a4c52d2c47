//go:build !js

package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestErrorsCarryTheStack: the cluster's exported functions return errors
// that match their sentinels and show, with %+v, the call that returned
// them (no NATS server needed: these are refused before any message).
func TestErrorsCarryTheStack(t *testing.T) {
	for name, err := range map[string]error{
		"join without a host": func() error { _, err := Join(nil, NodeInfo{ID: "n", URL: "http://n"}, nil, nil); return err }(),
		"a player with no name": func() error {
			_, err := CreateRoom(context.Background(), nil, RoomRequest{Room: "r", Players: []string{""}}, nil)
			return err
		}(),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: %v, want ErrInvalid", name, err)
		}
		if s := fmt.Sprintf("%+v", err); !strings.Contains(s, "cluster.") || !strings.Contains(s, "errors_test.go:") {
			t.Fatalf("%s: %%+v shows no stack:\n%s", name, s)
		}
	}
}
