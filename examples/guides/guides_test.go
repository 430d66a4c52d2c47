//go:build !js

package guides

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestGuideExcerpts: every Go block of the guides is a region of
// guides.go, verbatim (one tab of indentation less), and every region is
// in its guide: what a reader copies compiles.
func TestGuideExcerpts(t *testing.T) {
	src, err := os.ReadFile("guides.go")
	if err != nil {
		t.Fatal(err)
	}
	regions := map[string]string{} // "```go" block by guide name
	re := regexp.MustCompile(`(?s)// GUIDE:([a-z]+)-[a-z]+\n(.*?)\t// GUIDE:end`)
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		var lines []string
		for _, l := range strings.Split(strings.TrimRight(m[2], "\t\n"), "\n") {
			lines = append(lines, strings.TrimPrefix(l, "\t"))
		}
		regions["```go\n"+strings.Join(lines, "\n")+"\n```"] = m[1]
	}
	if len(regions) == 0 {
		t.Fatal("guides.go has no GUIDE regions")
	}
	docs := map[string]string{}
	for _, name := range []string{"worlds", "interest", "matchmaking", "deploying", "lockstep"} {
		b, err := os.ReadFile("../../docs/" + name + ".md")
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = string(b)
	}
	for block, guide := range regions {
		if !strings.Contains(docs[guide], block) {
			t.Errorf("docs/%s.md does not hold this region of guides.go verbatim:\n%s", guide, block)
		}
	}
	goBlock := regexp.MustCompile("(?s)```go\n.*?\n```")
	for name, text := range docs {
		for _, b := range goBlock.FindAllString(text, -1) {
			if _, ok := regions[b]; !ok {
				t.Errorf("docs/%s.md has a Go block that no region of guides.go compiles:\n%s", name, b)
			}
		}
	}
}
