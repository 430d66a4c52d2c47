package errstack

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestWith(t *testing.T) {
	if With(nil) != nil || Wrapf(nil, "x") != nil {
		t.Fatal("a nil error wrapped")
	}
	err := With(fmt.Errorf("reading: %w", io.EOF))
	if !errors.Is(err, io.EOF) {
		t.Fatal("the sentinel is lost")
	}
	if s := fmt.Sprintf("%+v", err); !strings.Contains(s, "errstack_test.go:") || !strings.Contains(s, "TestWith") {
		t.Fatalf("%%+v shows no stack:\n%s", s)
	}
	if again := With(err); again != err {
		t.Fatal("a second stack added to an error that has one")
	}
	w := Wrapf(err, "room %q", "r")
	if !errors.Is(w, io.EOF) || w.Error() != `room "r": reading: EOF` {
		t.Fatalf("Wrapf: %v", w)
	}
	if n := strings.Count(fmt.Sprintf("%+v", w), "TestWith"); n != 1 {
		t.Fatalf("%d stacks in a wrapped error that had one", n)
	}
	if w := Wrapf(io.EOF, "file %d", 3); !errors.Is(w, io.EOF) || !strings.Contains(fmt.Sprintf("%+v", w), "errstack_test.go:") {
		t.Fatalf("Wrapf of a plain error: %+v", w)
	}
}
