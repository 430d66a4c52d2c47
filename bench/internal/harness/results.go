package harness

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// ResultRE matches a RESULT line: the scenario's name, then its
// key=value fields.
var ResultRE = regexp.MustCompile(`^RESULT scenario=(\S+)((?: [a-z0-9_]+=\S+)+)$`)

// LastResult runs a scenario's command line (a test's) and returns the
// fields of the RESULT line it ends with, failing t if it does not.
func LastResult(t *testing.T, args ...string) map[string]string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Command(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	m := ResultRE.FindStringSubmatch(lines[len(lines)-1])
	if m == nil || m[1] != args[0] {
		t.Fatalf("last line %q is not a RESULT line for %s", lines[len(lines)-1], args[0])
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(m[2]) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	return kv
}
