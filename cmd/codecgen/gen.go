package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/tongbu/tongbu/codec"
)

// field is one encoded field of a record, as declared by its struct tag.
type field struct {
	name   string // Go field name
	goType string // the field's type as written, used for conversions
	kind   string // bool, uint, int, uvarint, varint, bytes, string, quant
	opt    bool   // a presence bit; the zero value costs one bit
	delta  int    // > 0: in a delta, a change that fits in this many signed bits is sent as a difference
	rel    string // int kind: the value is sent as an offset from this earlier field

	max, min   string // integer bounds, as Go constant expressions
	umax       uint64 // uint kind: max
	span       uint64 // int kind: max - min
	lenMax     int    // bytes, string
	qmin, qmax float64
	qstep      float64
	qvar       string // quant: name of the package-level quantizer
	fixedBits  int    // bits of the value when the kind has a fixed width, else -1
}

// record is one struct type to generate for.
type record struct {
	name   string
	fields []field
}

var intRanges = map[string][2]int64{
	"int8": {math.MinInt8, math.MaxInt8}, "int16": {math.MinInt16, math.MaxInt16},
	"int32": {math.MinInt32, math.MaxInt32}, "int64": {math.MinInt64, math.MaxInt64},
	"int": {math.MinInt64, math.MaxInt64},
}

var uintMax = map[string]uint64{
	"uint8": math.MaxUint8, "byte": math.MaxUint8, "uint16": math.MaxUint16,
	"uint32": math.MaxUint32, "uint64": math.MaxUint64, "uint": math.MaxUint64,
}

// generate parses the non-test Go files of dir and returns the formatted
// source of the codec methods for the named struct types.
func generate(dir string, typeNames []string) ([]byte, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	pkg := ""
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(src, []byte(generatedHeader)) {
			continue // our own output, possibly stale
		}
		f, err := parser.ParseFile(fset, n, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		pkg = f.Name.Name
		files = append(files, f)
	}
	var recs []record
	for _, name := range typeNames {
		st := findStruct(files, name)
		if st == nil {
			return nil, fmt.Errorf("type %s: no struct of that name in %s", name, dir)
		}
		rec, err := parseRecord(name, st)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return render(pkg, recs)
}

func findStruct(files []*ast.File, name string) *ast.StructType {
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok && ts.Name.Name == name {
					return st
				}
			}
		}
	}
	return nil
}

func parseRecord(name string, st *ast.StructType) (record, error) {
	rec := record{name: name}
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			return rec, fmt.Errorf("%s: embedded fields are not supported", name)
		}
		tag := ""
		if f.Tag != nil {
			raw, err := strconv.Unquote(f.Tag.Value)
			if err != nil {
				return rec, fmt.Errorf("%s: bad tag %s", name, f.Tag.Value)
			}
			tag = reflect.StructTag(raw).Get("codec")
		}
		if tag == "-" {
			continue
		}
		typ := types(f.Type)
		for _, n := range f.Names {
			fd, err := parseField(n.Name, typ, tag)
			if err != nil {
				return rec, fmt.Errorf("%s.%s: %w", name, n.Name, err)
			}
			if fd.kind == "quant" {
				fd.qvar = "codecQuant" + name + n.Name
			}
			rec.fields = append(rec.fields, fd)
		}
	}
	for i, f := range rec.fields {
		if f.rel == "" {
			continue
		}
		found := false
		for _, g := range rec.fields[:i] {
			found = found || (g.name == f.rel && (g.kind == "uint" || g.kind == "int") && g.rel == "")
		}
		if !found {
			return rec, fmt.Errorf("%s.%s: rel=%s must name an earlier uint or int field that is not itself relative", name, f.name, f.rel)
		}
	}
	if len(rec.fields) == 0 || len(rec.fields) > 64 {
		return rec, fmt.Errorf("%s: %d encoded fields; a record has 1 to 64", name, len(rec.fields))
	}
	return rec, nil
}

func types(e ast.Expr) string {
	var b bytes.Buffer
	format.Node(&b, token.NewFileSet(), e)
	return b.String()
}

// parseField reads a tag of the form "kind[,opt][,delta=N][,min=..][,max=..][,step=..]".
// An untagged bool, uintN or intN takes the kind and range of its type.
func parseField(name, goType, tag string) (field, error) {
	fd := field{name: name, goType: goType, fixedBits: -1}
	opts := map[string]string{}
	if tag != "" {
		parts := strings.Split(tag, ",")
		fd.kind = parts[0]
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			if _, dup := opts[k]; dup {
				return fd, fmt.Errorf("option %q given twice", k)
			}
			opts[k] = v
		}
	} else {
		switch {
		case goType == "bool":
			fd.kind = "bool"
		case uintMax[goType] != 0:
			fd.kind = "uint"
		case intRanges[goType] != [2]int64{}:
			fd.kind = "int"
		default:
			return fd, fmt.Errorf("type %s needs a codec tag", goType)
		}
	}
	take := func(k string) (string, bool) {
		v, ok := opts[k]
		delete(opts, k)
		return v, ok
	}
	if _, ok := take("opt"); ok {
		fd.opt = true
	}
	if v, ok := take("rel"); ok {
		if v == "" || v == name {
			return fd, fmt.Errorf("rel=%s: name another field", v)
		}
		fd.rel = v
	}
	if v, ok := take("delta"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 63 {
			return fd, fmt.Errorf("delta=%s: want 1 to 63 bits", v)
		}
		fd.delta = n
	}
	switch fd.kind {
	case "bool":
		fd.fixedBits = 1
	case "uint":
		fd.umax = uintMax[goType]
		if v, ok := take("max"); ok {
			m, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				return fd, fmt.Errorf("max=%s: %v", v, err)
			}
			if tm, known := uintMax[goType]; known && m > tm {
				return fd, fmt.Errorf("max=%s exceeds %s", v, goType)
			}
			fd.umax = m
		} else if fd.umax == 0 {
			return fd, fmt.Errorf("uint of type %s needs max=", goType)
		}
		fd.max = strconv.FormatUint(fd.umax, 10)
		fd.fixedBits = bits.Len64(fd.umax)
	case "int":
		lo, hi := intRanges[goType][0], intRanges[goType][1]
		known := intRanges[goType] != [2]int64{} && fd.rel == ""
		var err error
		if v, ok := take("min"); ok {
			if lo, err = strconv.ParseInt(v, 0, 64); err != nil {
				return fd, fmt.Errorf("min=%s: %v", v, err)
			}
		} else if !known {
			return fd, fmt.Errorf("int of type %s needs min=", goType)
		}
		if v, ok := take("max"); ok {
			if hi, err = strconv.ParseInt(v, 0, 64); err != nil {
				return fd, fmt.Errorf("max=%s: %v", v, err)
			}
		} else if !known {
			return fd, fmt.Errorf("int of type %s needs max=", goType)
		}
		if lo > hi {
			return fd, fmt.Errorf("min %d > max %d", lo, hi)
		}
		if known && (lo < intRanges[goType][0] || hi > intRanges[goType][1]) {
			return fd, fmt.Errorf("[%d, %d] exceeds %s", lo, hi, goType)
		}
		fd.min, fd.max = strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)
		if lo == math.MinInt64 {
			fd.min = "math.MinInt64"
		}
		fd.span = uint64(hi) - uint64(lo)
		fd.fixedBits = bits.Len64(fd.span)
	case "uvarint", "varint":
	case "bytes", "string":
		v, ok := take("max")
		if !ok {
			return fd, fmt.Errorf("%s needs max= (bytes)", fd.kind)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fd, fmt.Errorf("max=%s: want a length", v)
		}
		fd.lenMax = n
	case "quant":
		vals := [3]float64{}
		for i, k := range []string{"min", "max", "step"} {
			v, ok := take(k)
			if !ok {
				return fd, fmt.Errorf("quant needs %s=", k)
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fd, fmt.Errorf("%s=%s: %v", k, v, err)
			}
			vals[i] = f
		}
		q, err := codec.NewQuantizer(vals[0], vals[1], vals[2])
		if err != nil {
			return fd, err
		}
		fd.qmin, fd.qmax, fd.qstep = vals[0], vals[1], vals[2]
		fd.fixedBits = q.Bits()
	default:
		return fd, fmt.Errorf("unknown kind %q", fd.kind)
	}
	if fd.opt && fd.kind == "bool" {
		return fd, fmt.Errorf("opt on a bool saves nothing")
	}
	if fd.delta > 0 && fd.kind != "uint" && fd.kind != "int" {
		return fd, fmt.Errorf("delta= applies to uint and int fields")
	}
	if fd.rel != "" && (fd.kind != "int" || fd.delta > 0) {
		return fd, fmt.Errorf("rel= applies to int fields without delta=")
	}
	if len(opts) > 0 {
		keys := make([]string, 0, len(opts))
		for k := range opts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fd, fmt.Errorf("option %q does not apply to kind %s", keys[0], fd.kind)
	}
	return fd, nil
}
