package xrand

import "testing"

func TestIntNInRangeAndSpread(t *testing.T) {
	r := New(1)
	for _, n := range []int{1, 2, 3, 7, 16, 100, 4096} {
		counts := make([]int, n)
		draws := 2000 * n
		for range draws {
			v := r.IntN(n)
			if v < 0 || v >= n {
				t.Fatalf("IntN(%d) = %d", n, v)
			}
			counts[v]++
		}
		for v, c := range counts {
			if c < 1600 || c > 2400 {
				t.Fatalf("IntN(%d): %d drawn %d times of %d, want about 2000", n, v, c, draws)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	a, b := New(42), New(42)
	for range 1000 {
		if a.Uint64() != b.Uint64() {
			t.Fatal("same seed, different streams")
		}
	}
	if New(1).Uint64() == New(2).Uint64() {
		t.Fatal("different seeds gave the same first value")
	}
}
