package vectorfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	msg := []byte{0x04, 0x60, 0xff}
	if err := Check(dir, "m", "a message", msg, false); err == nil || !strings.Contains(err.Error(), "-update-vectors") {
		t.Fatalf("a missing file: %v", err)
	}
	if err := Check(dir, "m", "a message", msg, true); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "m.hex"))
	if string(b) != "# a message\n0460ff\n" {
		t.Fatalf("the file: %q", b)
	}
	if err := Check(dir, "m", "a message", msg, false); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, "m", "a message", []byte{0x04, 0x61, 0xff}, false); err == nil || !strings.Contains(err.Error(), "0460ff") {
		t.Fatalf("a changed message: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "bad.hex"), []byte("# bad\nzz\n"), 0o644)
	if _, err := Read(filepath.Join(dir, "bad.hex")); err == nil {
		t.Fatal("a file that is not hex was read")
	}
}
