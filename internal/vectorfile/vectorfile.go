// Package vectorfile keeps the hex test vectors that SPEC.md points to:
// one message a file, a "#" line saying what it holds, then the message
// in hex. The packages' tests write them from their encoders and check
// them against what the encoders write now.
package vectorfile

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Check compares msg with the file dir/name.hex; with update it writes the
// file first, saying about. The error says which file differs and how, or
// that it is missing and how to write it.
func Check(dir, name, about string, msg []byte, update bool) error {
	path := filepath.Join(dir, name+".hex")
	if update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		text := fmt.Sprintf("# %s\n%s\n", about, hex.EncodeToString(msg))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	got, err := Read(path)
	if err != nil {
		return fmt.Errorf("%w (run the test with -update-vectors to write it)", err)
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("%s holds %x, the encoders write %x", path, got, msg)
	}
	return nil
}

// Read returns the message a vector file holds: its last line, in hex.
func Read(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	msg, err := hex.DecodeString(lines[len(lines)-1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return msg, nil
}
