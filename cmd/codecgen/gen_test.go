package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate regenerates every record of the module and compares
// it with the committed file, so a change to the generator or to a record
// cannot land without `go generate`.
func TestGeneratedUpToDate(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		types []string
		file  string
	}{
		{"../../bench/internal/codecbench", []string{"Character"}, "character_codec.go"},
		{"../../codec/internal/recordtest", []string{"Sample", "Wide"}, "sample_codec.go"},
		{"../../examples/records", []string{"Unit"}, "unit_codec.go"},
	} {
		got, err := generate(tc.dir, tc.types)
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		want, err := os.ReadFile(filepath.Join(tc.dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/%s is stale: run go generate ./...", tc.dir, tc.file)
		}
	}
}

func TestParseFieldErrors(t *testing.T) {
	tests := []struct {
		goType, tag, want string
	}{
		{"float64", "", "needs a codec tag"},
		{"string", "string", "needs max="},
		{"uint8", "uint,max=300", "exceeds uint8"},
		{"int8", "int,min=-200", "exceeds int8"},
		{"int16", "int,min=5,max=1", "min 5 > max 1"},
		{"MyEnum", "uint", "needs max="},
		{"uint8", "wat", "unknown kind"},
		{"bool", "bool,opt", "saves nothing"},
		{"string", "string,max=4,delta=3", "applies to uint and int"},
		{"uint16", "uint,rel=X", "applies to int fields"},
		{"uint16", "int,rel=X,min=-4,max=4,delta=3", "without delta"},
		{"uint16", "uint,max=5,max=6", "given twice"},
		{"uint16", "uint,step=2", "does not apply"},
		{"float32", "quant,min=0,max=1", "needs step="},
		{"float32", "quant,min=0,max=1,step=0", "invalid"},
		{"uint32", "uint,delta=64", "1 to 63"},
	}
	for _, tt := range tests {
		t.Run(tt.goType+" "+tt.tag, func(t *testing.T) {
			_, err := parseField("F", tt.goType, tt.tag)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	dir := t.TempDir()
	src := `package p

type Empty struct{ Secret int ` + "`codec:\"-\"`" + ` }

type BadRel struct {
	A uint16 ` + "`codec:\"int,rel=B,min=-1,max=1\"`" + `
	B uint16
}

type Embeds struct{ Empty }
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]string{
		"Missing": "no struct",
		"Empty":   "1 to 64",
		"BadRel":  "earlier",
		"Embeds":  "embedded",
	} {
		if _, err := generate(dir, []string{typ}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to contain %q", typ, err, want)
		}
	}
}
