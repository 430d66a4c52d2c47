package fixed_test

import (
	"fmt"

	"github.com/tongbu/tongbu/lockstep/fixed"
)

func ExampleFixed() {
	speed, err := fixed.Parse("12.5") // from a config file
	if err != nil {
		panic(err)
	}
	// Per tick at 30 Hz: divide by the rate (rounded once) rather than
	// multiplying by a rounded 1/30 (rounded twice).
	step := speed.DivInt(30)
	fmt.Println(step.Text(6), step.Raw())
	fmt.Println(speed.Mul(fixed.FromFraction(1, 30)).Text(6))
	fmt.Println(fixed.FromInt(2).Sqrt().Text(6))
	fmt.Println(fixed.Sin(fixed.HalfPi), fixed.Cos(fixed.Pi))
	fmt.Println(fixed.Atan2(fixed.One, fixed.One).Text(6))
	fmt.Println(fixed.One.Div(0) == fixed.MaxValue) // saturates, never panics
	// Output:
	// 0.416667 436907
	// 0.416673
	// 1.414213
	// 1 -1
	// 0.785398
	// true
}

func ExampleVec() {
	pos := fixed.V(fixed.FromInt(100), fixed.FromInt(200))
	target := fixed.V(fixed.FromInt(400), fixed.FromInt(600))
	fmt.Println(pos.Dist(target))
	dir := target.Sub(pos).Normalize()
	fmt.Println(dir)
	pos = pos.Add(dir.Scale(fixed.FromInt(10)))
	fmt.Println(pos.X.Text(3), pos.Y.Text(3))
	fmt.Println(fixed.V(fixed.One, 0).Rotate(fixed.HalfPi))
	// Output:
	// 500
	// (0.6000003814697265625, 0.80000019073486328125)
	// 106.000 208.000
	// (0, 1)
}

func ExampleRand() {
	r := fixed.NewRand(2024) // the match seed
	fmt.Println(r.Intn(6)+1, r.Intn(6)+1)
	saved := r.State() // part of a snapshot
	a := r.Range(fixed.FromInt(-10), fixed.FromInt(10))
	r.SetState(saved) // roll back
	b := r.Range(fixed.FromInt(-10), fixed.FromInt(10))
	fmt.Println(a == b)
	// Output:
	// 1 5
	// true
}

func ExampleHasher() {
	var h fixed.Hasher
	h.WriteUint64(42) // frame number
	h.WriteVec(fixed.V(fixed.FromInt(3), fixed.FromInt(-4)))
	h.WriteFixed(fixed.FromFraction(1, 3))
	fmt.Printf("%016x\n", h.Sum64())
	// Output:
	// 4ab0adc0191aa855
}
