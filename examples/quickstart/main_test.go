//go:build !js

package main

import (
	"os"
	"regexp"
	"strings"
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

// TestReadmeExcerpts: the README's first code blocks are this program's
// marked regions, verbatim (one tab of indentation less), so that what a
// new user copies compiles and runs.
func TestReadmeExcerpts(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"server", "client"} {
		_, rest, ok := strings.Cut(string(src), "// README:"+name+"\n")
		region, _, ok2 := strings.Cut(rest, "// README:end")
		if !ok || !ok2 {
			t.Fatalf("main.go has no README:%s region", name)
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimRight(region, "\t\n"), "\n") {
			lines = append(lines, strings.TrimPrefix(l, "\t"))
		}
		block := "```go\n" + strings.Join(lines, "\n") + "\n```"
		if !strings.Contains(string(readme), block) {
			t.Errorf("README.md does not hold the %s region of examples/quickstart/main.go verbatim:\n%s", name, block)
		}
	}
}
