//go:build !js

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 0, "codec"},
		{[]string{"nope"}, 2, "unknown scenario"},
		{[]string{"-benchtime", "-1s", "codec"}, 2, "positive"},
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
