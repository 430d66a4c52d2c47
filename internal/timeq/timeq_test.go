package timeq

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestOrder(t *testing.T) {
	base := time.Unix(1000, 0)
	tests := []struct {
		name string
		at   []int // milliseconds after base, in push order
	}{
		{"empty", nil},
		{"one", []int{5}},
		{"sorted", []int{1, 2, 3, 4}},
		{"reversed", []int{4, 3, 2, 1}},
		{"ties keep push order", []int{3, 1, 3, 1, 3, 2}},
		{"all tied", []int{7, 7, 7, 7, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue[int]
			for i, ms := range tt.at {
				q.Push(base.Add(time.Duration(ms)*time.Millisecond), i)
			}
			want := make([]int, len(tt.at))
			for i := range want {
				want[i] = i
			}
			slices.SortStableFunc(want, func(a, b int) int { return tt.at[a] - tt.at[b] })
			var got []int
			for q.Len() > 0 {
				at, v := q.Pop()
				if !at.Equal(base.Add(time.Duration(tt.at[v]) * time.Millisecond)) {
					t.Fatalf("value %d came with time %v", v, at)
				}
				got = append(got, v)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("popped %v, want %v", got, want)
			}
		})
	}
}

// TestRandom checks the queue against a stable sort over many seeded
// runs of interleaved pushes and pops.
func TestRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(0, 0)
	for range 200 {
		var q Queue[int]
		type item struct{ at, id int }
		var model []item
		id := 0
		for range 300 {
			if rng.IntN(3) > 0 || len(model) == 0 {
				ms := rng.IntN(50)
				q.Push(base.Add(time.Duration(ms)*time.Millisecond), id)
				model = append(model, item{ms, id})
				id++
				continue
			}
			slices.SortStableFunc(model, func(a, b item) int { return a.at - b.at })
			_, v := q.Pop()
			if v != model[0].id {
				t.Fatalf("popped %d, want %d", v, model[0].id)
			}
			model = model[1:]
		}
		if q.Len() != len(model) {
			t.Fatalf("%d left, want %d", q.Len(), len(model))
		}
	}
}

func TestPopDueAndClear(t *testing.T) {
	base := time.Unix(0, 0)
	var q Queue[string]
	if _, ok := q.Next(); ok {
		t.Fatal("an empty queue has a next time")
	}
	q.Push(base.Add(2*time.Second), "b")
	q.Push(base.Add(time.Second), "a")
	if at, ok := q.Next(); !ok || !at.Equal(base.Add(time.Second)) {
		t.Fatalf("next %v %v", at, ok)
	}
	if _, ok := q.PopDue(base); ok {
		t.Fatal("popped a value not due")
	}
	if v, ok := q.PopDue(base.Add(time.Second)); !ok || v != "a" {
		t.Fatalf("due at its time: %q %v", v, ok)
	}
	q.Clear()
	if q.Len() != 0 {
		t.Fatal("not empty after Clear")
	}
}

func BenchmarkPushPop(b *testing.B) {
	base := time.Unix(0, 0)
	var q Queue[[3]uint64]
	for i := range 1000 {
		q.Push(base.Add(time.Duration(i*7919%1000)*time.Microsecond), [3]uint64{})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at, v := q.Pop()
		q.Push(at.Add(time.Millisecond), v)
	}
}
