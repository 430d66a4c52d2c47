package main

// Runs of fixed-width fields are packed into one 64-bit accumulator and
// written with a single Writer.WriteBits, or taken from a single Reader.Peek
// and consumed with one Reader.Skip. groupBits is the most one run may
// hold: Peek guarantees 56 valid bits.
const groupBits = 56

// item is one field as it appears in one encoding.
type item struct {
	f       field
	maskBit int  // >= 0: present only when this bit of the dirty mask m is set
	delta   bool // use the field's delta= coding (delta encoding only)
	mask    int  // > 0: this item is the dirty mask itself, of this many bits
}

// valueBits is the most bits the value of f takes in a packed run, or -1
// when f cannot be packed (varints, strings, wide fields).
func valueBits(f field) int {
	switch f.kind {
	case "bool", "uint", "int", "quant":
	default:
		return -1
	}
	w := f.fixedBits
	if f.opt {
		w++
	}
	if w > groupBits {
		return -1
	}
	return w
}

func (it item) maxBits() int {
	if it.mask > 0 {
		if it.mask > groupBits {
			return -1
		}
		return it.mask
	}
	w := valueBits(it.f)
	if w < 0 || !it.delta || it.f.delta == 0 {
		return w
	}
	return 1 + max(w, it.f.delta)
}

// groups splits items into runs that fit groupBits; an item that cannot be
// packed forms a run of its own, marked by a nil-safe single element with
// packed == false.
type run struct {
	items  []item
	packed bool
}

func groups(items []item) []run {
	var out []run
	var cur []item
	width := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, run{items: cur, packed: true})
			cur, width = nil, 0
		}
	}
	for _, it := range items {
		w := it.maxBits()
		if w < 0 {
			flush()
			out = append(out, run{items: []item{it}})
			continue
		}
		if width+w > groupBits {
			flush()
		}
		cur = append(cur, it)
		width += w
	}
	flush()
	return out
}

// encodeRuns writes items from record v (and baseline base, for deltas).
func (e *emitter) encodeRuns(rec string, items []item) {
	for _, g := range groups(items) {
		if !g.packed {
			e.encodeStream(g.items[0])
			continue
		}
		e.p("{")
		e.p("var a uint64")
		e.p("var n uint")
		for _, it := range g.items {
			e.packItem(rec, it)
		}
		e.p("w.WriteBits(a, int(n))")
		e.p("}")
	}
}

func (e *emitter) encodeStream(it item) {
	if it.mask > 0 {
		e.p("w.WriteBits(m, %d)", it.mask)
		return
	}
	if it.maskBit >= 0 {
		e.p("if m&(1<<%d) != 0 {", it.maskBit)
		defer e.p("}")
	}
	f := it.f
	if it.delta && f.delta > 0 {
		lim := int64(1) << (f.delta - 1)
		e.p("if d := int64(uint64(v.%s) - uint64(base.%s)); d >= %d && d < %d {", f.name, f.name, -lim, lim)
		e.p("w.WriteBool(true)")
		e.p("w.WriteInt(d, %d, %d)", -lim, lim-1)
		e.p("} else {")
		e.p("w.WriteBool(false)")
		e.encode(f, "v")
		e.p("}")
		return
	}
	e.encode(f, "v")
}

// packItem appends one item to the accumulator a at bit n.
func (e *emitter) packItem(rec string, it item) {
	if it.mask > 0 {
		e.p("a |= m << n")
		e.p("n += %d", it.mask)
		return
	}
	if it.maskBit >= 0 {
		e.p("if m&(1<<%d) != 0 {", it.maskBit)
		defer e.p("}")
	}
	f := it.f
	if it.delta && f.delta > 0 {
		lim := int64(1) << (f.delta - 1)
		e.p("if d := int64(uint64(v.%s) - uint64(base.%s)); d >= %d && d < %d {", f.name, f.name, -lim, lim)
		e.p("a |= (1 | uint64(d+%d)<<1) << n", lim)
		e.p("n += %d", 1+f.delta)
		e.p("} else {")
		e.p("n++")
		e.packValue(rec, f)
		e.p("}")
		return
	}
	e.packValue(rec, f)
}

func (e *emitter) packValue(rec string, f field) {
	name := rec + "." + f.name
	if f.opt {
		e.p("if %s {", nonzero(f, "v"))
		e.p("a |= 1 << n")
		e.p("n++")
		e.packPlain(name, f)
		e.p("} else {")
		e.p("n++")
		e.p("}")
		return
	}
	e.packPlain(name, f)
}

func (e *emitter) packPlain(name string, f field) {
	switch f.kind {
	case "bool":
		e.p("if v.%s { a |= 1 << n }", f.name)
		e.p("n++")
		return
	case "uint":
		e.p("{")
		e.p("x := uint64(v.%s)", f.name)
		if f.umax < uintMax[f.goType] || uintMax[f.goType] == 0 {
			e.p("if x > %s {", f.max)
			e.p("w.Fail(codec.FieldError(%q, codec.ErrOutOfRange))", name)
			e.p("x = %s", f.max)
			e.p("}")
		}
	case "int":
		e.p("{")
		if f.rel != "" {
			e.p("x := int64(v.%s) - int64(v.%s)", f.name, f.rel)
		} else {
			e.p("x := int64(v.%s)", f.name)
		}
		e.p("if x < %s || x > %s {", f.min, f.max)
		e.p("w.Fail(codec.FieldError(%q, codec.ErrOutOfRange))", name)
		e.p("x = min(max(x, %s), %s)", f.min, f.max)
		e.p("}")
		e.p("a |= uint64(x-(%s)) << n", f.min)
		e.p("n += %d", f.fixedBits)
		e.p("}")
		return
	case "quant":
		e.p("{")
		e.p("x, ok := %s.Index(float64(v.%s))", f.qvar, f.name)
		e.p("if !ok { w.Fail(codec.FieldError(%q, codec.ErrOutOfRange)) }", name)
	}
	e.p("a |= x << n")
	e.p("n += %d", f.fixedBits)
	e.p("}")
}

// decodeRuns reads items into t (from base, for deltas). The function must
// have declared bad (the first field out of range) and, for deltas, m.
func (e *emitter) decodeRuns(rec string, items []item) {
	for _, g := range groups(items) {
		if !g.packed {
			e.decodeStream(rec, g.items[0])
			continue
		}
		e.p("{")
		e.p("a := r.Peek()")
		e.p("var n uint")
		for _, it := range g.items {
			e.unpackItem(rec, it)
		}
		e.p("r.Skip(int(n))")
		e.p("}")
		e.p("if err := r.Err(); err != nil { return codec.FieldError(%q, err) }", rec)
		e.p("if bad != \"\" {")
		e.p("r.Fail(codec.ErrOutOfRange)")
		e.p("return codec.FieldError(bad, r.Err())")
		e.p("}")
	}
}

func (e *emitter) decodeStream(rec string, it item) {
	if it.mask > 0 {
		e.p("m = r.ReadBits(%d)", it.mask)
		e.p("if err := r.Err(); err != nil { return codec.FieldError(%q, err) }", rec)
		return
	}
	if it.maskBit >= 0 {
		e.p("if m&(1<<%d) != 0 {", it.maskBit)
		defer e.p("}")
	}
	f := it.f
	if it.delta && f.delta > 0 {
		lim := int64(1) << (f.delta - 1)
		e.p("if r.ReadBool() {")
		e.p("x := uint64(base.%s) + uint64(r.ReadInt(%d, %d))", f.name, -lim, lim-1)
		e.deltaRangeCheck(f, rec)
		e.p("} else {")
		e.decode(f)
		e.p("}")
	} else {
		e.decode(f)
	}
	e.check(rec, f)
}

// deltaRangeCheck checks and stores x, the baseline plus a decoded difference.
func (e *emitter) deltaRangeCheck(f field, rec string) {
	name := rec + "." + f.name
	if f.kind == "uint" {
		e.p("if x > %s { r.Fail(codec.FieldError(%q, codec.ErrOutOfRange)) }", f.max, name)
		e.p("t.%s = %s(x)", f.name, f.goType)
		return
	}
	e.p("if y := int64(x); y < %s || y > %s { r.Fail(codec.FieldError(%q, codec.ErrOutOfRange)) }", f.min, f.max, name)
	e.p("t.%s = %s(int64(x))", f.name, f.goType)
}

func (e *emitter) unpackItem(rec string, it item) {
	if it.mask > 0 {
		e.p("m = a & %#x", uint64(1)<<it.mask-1)
		e.p("n += %d", it.mask)
		return
	}
	if it.maskBit >= 0 {
		e.p("if m&(1<<%d) != 0 {", it.maskBit)
		defer e.p("}")
	}
	f := it.f
	if it.delta && f.delta > 0 {
		lim := int64(1) << (f.delta - 1)
		e.p("if a>>n&1 == 1 {")
		e.p("x := uint64(base.%s) + uint64(int64(a>>(n+1)&%#x)-%d)", f.name, uint64(1)<<f.delta-1, lim)
		e.p("n += %d", 1+f.delta)
		name := rec + "." + f.name
		if f.kind == "uint" {
			e.p("if x > %s && bad == \"\" { bad = %q }", f.max, name)
			e.p("t.%s = %s(x)", f.name, f.goType)
		} else {
			e.p("if y := int64(x); (y < %s || y > %s) && bad == \"\" { bad = %q }", f.min, f.max, name)
			e.p("t.%s = %s(int64(x))", f.name, f.goType)
		}
		e.p("} else {")
		e.p("n++")
		e.unpackValue(rec, f)
		e.p("}")
		return
	}
	e.unpackValue(rec, f)
}

func (e *emitter) unpackValue(rec string, f field) {
	if f.opt {
		e.p("if a>>n&1 == 1 {")
		e.p("n++")
		e.unpackPlain(rec, f)
		e.p("} else {")
		e.p("n++")
		switch {
		case f.rel != "":
			e.p("t.%s = %s(t.%s)", f.name, f.goType, f.rel)
		default:
			e.p("t.%s = 0", f.name)
		}
		e.p("}")
		return
	}
	e.unpackPlain(rec, f)
}

func (e *emitter) unpackPlain(rec string, f field) {
	name := rec + "." + f.name
	mask := uint64(1)<<f.fixedBits - 1
	switch f.kind {
	case "bool":
		e.p("t.%s = %s(a>>n&1 == 1)", f.name, f.goType)
		e.p("n++")
	case "uint":
		e.p("{")
		e.p("x := a >> n & %#x", mask)
		e.p("n += %d", f.fixedBits)
		if f.umax != mask {
			e.p("if x > %s && bad == \"\" { bad = %q }", f.max, name)
		}
		e.p("t.%s = %s(x)", f.name, f.goType)
		e.p("}")
	case "int":
		e.p("{")
		e.p("u := a >> n & %#x", mask)
		e.p("n += %d", f.fixedBits)
		if f.span != mask {
			e.p("if u > %d && bad == \"\" { bad = %q }", f.span, name)
		}
		e.p("x := int64(u) + (%s)", f.min)
		if f.rel != "" {
			e.p("x += int64(t.%s)", f.rel)
			e.p("if int64(%s(x)) != x && bad == \"\" { bad = %q }", f.goType, name)
		}
		e.p("t.%s = %s(x)", f.name, f.goType)
		e.p("}")
	case "quant":
		e.p("{")
		e.p("x := a >> n & %#x", mask)
		e.p("n += %d", f.fixedBits)
		e.p("if x > %s.MaxIndex() && bad == \"\" { bad = %q }", f.qvar, name)
		e.p("t.%s = %s(%s.Value(x))", f.name, f.goType, f.qvar)
		e.p("}")
	}
}
