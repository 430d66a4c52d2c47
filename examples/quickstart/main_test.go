//go:build !js

package main

import (
	"os"
	"regexp"
	"testing"
	"time"
)

func TestQuickstart(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	if err := run(6*time.Second, f); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.Name())
	m := regexp.MustCompile(`(?m)^\w+ \(slot \d\): (\d+) frames, first 60 hash (\w+)$`).FindAllStringSubmatch(string(b), -1)
	if len(m) != 2 || m[0][2] != m[1][2] {
		t.Fatalf("the bots disagree or failed:\n%s", b)
	}
}
