//go:build !js

package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCommands runs the tool's command lines; bench and demo build and run
// the programs of the bench and examples modules of this checkout.
func TestCommands(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 2, "usage"},
		{[]string{"help"}, 0, "usage"},
		{[]string{"version"}, 0, "tongbu dev"},
		{[]string{"nope"}, 2, "unknown command"},
		{[]string{"bench"}, 0, "codec"},
		{[]string{"bench", "nope"}, 2, "unknown scenario"},
		{[]string{"demo", "-nope"}, 2, "not defined"},
		{[]string{"serve", "-config", "/nonexistent.json"}, 2, "config"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, errOut.String())
			}
			if all := out.String() + errOut.String(); !strings.Contains(all, tt.contains) {
				t.Fatalf("output %q does not contain %q", all, tt.contains)
			}
		})
	}
}
