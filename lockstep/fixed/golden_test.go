package fixed

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// The golden test is the cross-platform check. It runs a fixed list of
// operations and a short simulation and compares every raw result, and a
// running hash over them, with values hard-coded here. The values were
// computed on linux/amd64; run the same test on every target, for wasm with
//
//	GOOS=js GOARCH=wasm go test -exec="$(go env GOROOT)/lib/wasm/go_js_wasm_exec" ./lockstep/fixed/
//
// A platform, compiler or change that produces a single different bit fails
// it. If a change to the package is meant to change results (it breaks
// replays and mixed-version matches), print the new table with
//
//	go test -run TestGolden ./lockstep/fixed/ -args -golden.print
var printGolden = flag.Bool("golden.print", false, "print the golden table of TestGolden")

type goldenOp struct {
	name string
	got  int64
}

// goldenOps returns the operations of the golden test and their results.
func goldenOps() []goldenOp {
	var ops []goldenOp
	add := func(name string, v int64) { ops = append(ops, goldenOp{name, v}) }
	p := func(s string) Fixed {
		v, err := Parse(s)
		if err != nil {
			return MinValue // shows up as a mismatch
		}
		return v
	}
	a, b := p("12.345"), p("-0.007")
	big := p("99999.999")
	add("Parse 12.345", a.Raw())
	add("Parse -0.007", b.Raw())
	add("FromFraction 22/7", FromFraction(22, 7).Raw())
	add("Add", a.Add(b).Raw())
	add("Sub", a.Sub(b).Raw())
	add("Mul", a.Mul(b).Raw())
	add("Mul big", big.Mul(big).Raw())
	add("Mul saturate", big.Mul(big).Mul(big).Raw())
	add("Div", a.Div(b).Raw())
	add("Div third", One.Div(FromInt(3)).Raw())
	add("Div by zero", b.Div(0).Raw())
	add("MulInt", b.MulInt(-1234567).Raw())
	add("DivInt", a.DivInt(7).Raw())
	add("Sqrt 2", FromInt(2).Sqrt().Raw())
	add("Sqrt a", a.Sqrt().Raw())
	add("Sqrt big", big.Mul(big).Sqrt().Raw())
	add("Sqrt max", MaxValue.Sqrt().Raw())
	add("Round", a.Round().Raw())
	add("Floor neg", b.Floor().Raw())
	add("Lerp", Lerp(a, big, p("0.3")).Raw())
	for _, s := range []string{"0", "0.001", "0.5", "1", "2.5", "-3", "3.1415", "100", "-12345.678", "8000000000000"} {
		x := p(s)
		sn, cs := SinCos(x)
		add("Sin "+s, sn.Raw())
		add("Cos "+s, cs.Raw())
	}
	for _, yx := range [][2]string{
		{"1", "1"}, {"-1", "1"}, {"1", "-1"}, {"-1", "-1"}, {"0", "-5"}, {"3", "0"},
		{"1", "100000"}, {"100000", "0.001"}, {"-7.25", "2.5"}, {"0", "0"},
	} {
		add("Atan2 "+yx[0]+" "+yx[1], Atan2(p(yx[0]), p(yx[1])).Raw())
	}
	v, w := V(a, big), V(b, p("-42.5"))
	add("Dot", v.Dot(w).Raw())
	add("Cross", v.Cross(w).Raw())
	add("LenSq", v.LenSq().Raw())
	add("Len", v.Len().Raw())
	add("Dist", v.Dist(w).Raw())
	n := w.Normalize()
	add("Normalize X", n.X.Raw())
	add("Normalize Y", n.Y.Raw())
	rot := v.Rotate(p("0.75"))
	add("Rotate X", rot.X.Raw())
	add("Rotate Y", rot.Y.Raw())
	add("Angle", w.Angle().Raw())
	r := NewRand(20240611)
	add("Rand Uint64", int64(r.Uint64()))
	add("Rand Intn", int64(r.Intn(1000)))
	add("Rand Fixed", r.Fixed().Raw())
	add("Rand Range", r.Range(p("-100000"), p("100000")).Raw())

	// A short simulation: units on a 100,000-unit map steer towards
	// random targets, turn, move and bounce, for 2000 ticks.
	type unit struct {
		pos, vel Vec
		target   Vec
	}
	sim := NewRand(99)
	units := make([]unit, 32)
	world := FromInt(100000)
	for i := range units {
		units[i].pos = V(sim.Range(0, world), sim.Range(0, world))
		units[i].target = V(sim.Range(0, world), sim.Range(0, world))
	}
	speed, turn := p("37.5"), p("0.05")
	var h Hasher
	for tick := range 2000 {
		for i := range units {
			u := &units[i]
			to := u.target.Sub(u.pos)
			if to.Len() < speed {
				u.target = V(sim.Range(0, world), sim.Range(0, world))
				continue
			}
			want := to.Normalize().Scale(speed)
			// Turn the velocity towards the wanted direction by at
			// most turn radians per tick.
			d := Atan2(u.vel.Cross(want), u.vel.Dot(want)).Clamp(turn.Neg(), turn)
			if u.vel == (Vec{}) {
				u.vel = want
			} else {
				u.vel = u.vel.Rotate(d).Normalize().Scale(speed)
			}
			u.pos = u.pos.Add(u.vel)
			u.pos.X = u.pos.X.Clamp(0, world)
			u.pos.Y = u.pos.Y.Clamp(0, world)
		}
		if tick%100 == 99 {
			for _, u := range units {
				h.WriteVec(u.pos)
				h.WriteVec(u.vel)
			}
			h.WriteUint64(sim.Uint64())
		}
	}
	add("Simulation hash", int64(h.Sum64()))
	add("Simulation unit 0 X", units[0].pos.X.Raw())
	add("Simulation unit 31 Y", units[31].pos.Y.Raw())

	var all Hasher
	for _, op := range ops {
		all.WriteString(op.name)
		all.WriteInt64(op.got)
	}
	add("Hash of all", int64(all.Sum64()))
	return ops
}

// golden is the expected result of each operation in goldenOps, in order.
var golden = []int64{
	12944671,             // Parse 12.345
	-7340,                // Parse -0.007
	3295525,              // FromFraction 22/7
	12937331,             // Add
	12952011,             // Sub
	-90612,               // Mul
	10485759790200001,    // Mul big
	9223372036854775807,  // Mul saturate
	-1849246776,          // Div
	349525,               // Div third
	-9223372036854775808, // Div by zero
	9061721780,           // MulInt
	1849239,              // DivInt
	1482910,              // Sqrt 2
	3684219,              // Sqrt a
	104857598951,         // Sqrt big
	3109888511975,        // Sqrt max
	12582912,             // Round
	-1048576,             // Floor neg
	31466360953,          // Lerp
	0,                    // Sin 0
	1048576,              // Cos 0
	1049,                 // Sin 0.001
	1048575,              // Cos 0.001
	502714,               // Sin 0.5
	920212,               // Cos 0.5
	882346,               // Sin 1
	566548,               // Cos 1
	627544,               // Sin 2.5
	-840060,              // Cos 2.5
	-147975,              // Sin -3
	-1038082,             // Cos -3
	97,                   // Sin 3.1415
	-1048576,             // Cos 3.1415
	-530963,              // Sin 100
	904207,               // Cos 100
	738282,               // Sin -12345.678
	744614,               // Cos -12345.678
	894698,               // Sin 8000000000000
	546833,               // Cos 8000000000000
	823550,               // Atan2 1 1
	-823550,              // Atan2 -1 1
	2470649,              // Atan2 1 -1
	-2470649,             // Atan2 -1 -1
	3294199,              // Atan2 0 -5
	1647099,              // Atan2 3 0
	10,                   // Atan2 1 100000
	1647099,              // Atan2 100000 0.001
	-1298910,             // Atan2 -7.25 2.5
	0,                    // Atan2 0 0
	-4456448046030,       // Dot
	183851475,            // Cross
	10485759950001968,    // LenSq
	104857599750,         // Len
	104902164231,         // Dist
	-173,                 // Normalize X
	-1048576,             // Normalize Y
	-71465532256,         // Rotate X
	76731961559,          // Rotate Y
	-1647272,             // Angle
	4081854167545338792,  // Rand Uint64
	276,                  // Rand Intn
	1044423,              // Rand Fixed
	98034872600,          // Rand Range
	4664275634948137621,  // Simulation hash
	27829005396,          // Simulation unit 0 X
	80671291019,          // Simulation unit 31 Y
	5818628462638709004,  // Hash of all
}

func TestGolden(t *testing.T) {
	ops := goldenOps()
	if *printGolden || len(golden) != len(ops) {
		var b strings.Builder
		for _, op := range ops {
			fmt.Fprintf(&b, "\t%d, // %s\n", op.got, op.name)
		}
		t.Logf("golden table:\n%s", b.String())
	}
	if len(golden) != len(ops) {
		t.Fatalf("golden table has %d entries, the test %d", len(golden), len(ops))
	}
	for i, op := range ops {
		if op.got != golden[i] {
			t.Errorf("%s = %d, want %d", op.name, op.got, golden[i])
		}
	}
}
