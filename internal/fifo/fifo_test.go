package fifo

import (
	"math/rand/v2"
	"testing"
)

// TestAgainstSlice drives a Queue and a plain slice with the same random
// pushes and pops.
func TestAgainstSlice(t *testing.T) {
	var q Queue[int]
	var model []int
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 100000 {
		if r.IntN(3) > 0 {
			q.Push(i)
			model = append(model, i)
			continue
		}
		x, ok := q.Pop()
		if ok != (len(model) > 0) {
			t.Fatalf("step %d: Pop ok=%v with %d queued", i, ok, len(model))
		}
		if ok {
			if x != model[0] {
				t.Fatalf("step %d: popped %d, want %d", i, x, model[0])
			}
			model = model[1:]
		}
		if q.Len() != len(model) {
			t.Fatalf("step %d: Len %d, want %d", i, q.Len(), len(model))
		}
		if k := len(model); k > 0 {
			if j := r.IntN(k); *q.At(j) != model[j] {
				t.Fatalf("step %d: At(%d) = %d, want %d", i, j, *q.At(j), model[j])
			}
		}
	}
}
