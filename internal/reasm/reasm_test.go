package reasm

import (
	"math/rand/v2"
	"testing"
)

// TestStreamAgainstBitmap compares a Stream with a naive model, a bitmap
// of the bytes received and the message ends seen, over random ranges
// that overlap, repeat and arrive in any order.
func TestStreamAgainstBitmap(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		const size = 300
		var s Stream
		var have [size]bool
		var ends [size + 1]bool
		popped := uint64(0) // end of the last message popped
		for range 100 {
			a := rng.Uint64N(size)
			b := min(a+1+rng.Uint64N(20), size)
			end := rng.IntN(3) == 0
			dup := b <= s.Next()
			if got := s.Add(Span{a, b}, end); got == dup {
				t.Fatalf("seed %d: Add([%d, %d)) = %v with Next %d", seed, a, b, got, s.Next())
			}
			if !dup {
				for i := a; i < b; i++ {
					have[i] = true
				}
				ends[b] = ends[b] || end
			}
			next, n := uint64(0), uint64(0)
			for next < size && have[next] {
				next++
			}
			for _, h := range have {
				if h {
					n++
				}
			}
			if s.Next() != next || s.Received() != n {
				t.Fatalf("seed %d: Next %d Received %d, want %d %d", seed, s.Next(), s.Received(), next, n)
			}
			prev := next
			for i, r := range s.Ranges() {
				if r.Start <= prev || r.End <= r.Start || !have[r.Start] || r.End < size && have[r.End] || !have[r.End-1] {
					t.Fatalf("seed %d: range %d %v (after %d)", seed, i, r, prev)
				}
				prev = r.End
			}
			for {
				m, ok := s.Message()
				if !ok {
					break
				}
				e := popped + m
				if e > next || !ends[e] {
					t.Fatalf("seed %d: message of %d bytes ending at %d (next %d)", seed, m, e, next)
				}
				for i := popped + 1; i < e; i++ {
					if ends[i] {
						t.Fatalf("seed %d: message [%d, %d) skips the end at %d", seed, popped, e, i)
					}
				}
				popped = e
			}
			for i := popped + 1; i <= next; i++ {
				if ends[i] {
					t.Fatalf("seed %d: a message ending at %d <= Next %d was not returned", seed, i, next)
				}
			}
		}
	}
}
