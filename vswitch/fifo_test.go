package vswitch

import (
	"math/rand/v2"
	"testing"
)

// TestFifoModel checks port queues sharing one block pool against plain
// slices over random pushes and pops: the same entries in the same
// order, and once every queue is empty, no block held.
func TestFifoModel(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 9))
		var pool blockPool
		qs := make([]fifo, 1+rng.IntN(6))
		model := make([][]entry, len(qs))
		for i := range 5000 {
			k := rng.IntN(len(qs))
			pushes := 7 // of 10: the queues grow over several blocks, then drain
			if i >= 2500 {
				pushes = 3
			}
			if rng.IntN(10) < pushes {
				e := entry{h: Handle(i), wl: uint32(rng.IntN(9000)), in: int32(rng.IntN(64)) - 1}
				qs[k].push(&pool, e)
				model[k] = append(model[k], e)
			} else if len(model[k]) > 0 {
				if got := qs[k].pop(&pool); got != model[k][0] {
					t.Fatalf("seed %d op %d: queue %d popped %+v, want %+v", seed, i, k, got, model[k][0])
				}
				model[k] = model[k][1:]
			}
			if int(qs[k].n) != len(model[k]) {
				t.Fatalf("seed %d op %d: queue %d holds %d, want %d", seed, i, k, qs[k].n, len(model[k]))
			}
		}
		for k := range qs {
			for qs[k].n > 0 {
				qs[k].pop(&pool)
			}
		}
		if held := pool.InUse(); held != 0 {
			t.Fatalf("seed %d: empty queues hold %d blocks", seed, held)
		}
	}
}
