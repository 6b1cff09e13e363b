package vswitch

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/openmrc/mrc/mtime"
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

// TestFifoBlockSize: a queue block is 80 bytes, its entries' ingress
// ports packed in 16 bits each: a large fabric's switches hold millions
// of blocks at the peak of a run.
func TestFifoBlockSize(t *testing.T) {
	if n := unsafe.Sizeof(qblock{}); n != 80 {
		t.Fatalf("a queue block takes %d bytes, want 80", n)
	}
}

// TestFifoInPort: ingress ports -1 through 65534, the most a switch has,
// come back from the queue as they went in; a value that is not a port
// comes back as -1.
func TestFifoInPort(t *testing.T) {
	var pool blockPool
	var q fifo
	ins := []int32{-1, 0, 1, 255, 256, 65533, 65534, 65535, -2, 1 << 20}
	for i, in := range ins {
		q.push(&pool, entry{h: Handle(i), wl: 1 << 20, in: in, at: mtime.Picos(1) << 50})
	}
	for i, in := range ins {
		want := entry{h: Handle(i), wl: 1 << 20, in: in, at: mtime.Picos(1) << 50}
		if in < -1 || in > 65534 {
			want.in = -1
		}
		if got := q.pop(&pool); got != want {
			t.Fatalf("popped %+v, want %+v", got, want)
		}
	}
}
