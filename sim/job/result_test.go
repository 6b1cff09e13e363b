package job

import (
	"math/rand/v2"
	"testing"
)

// naive marks every nanosecond of [0, 200) that a set of spans covers.
func naive(s []span) [200]bool {
	var on [200]bool
	for _, x := range s {
		for t := x.from; t < x.to; t++ {
			on[t] = true
		}
	}
	return on
}

func randomSpans(r *rand.Rand) []span {
	var s []span
	for range r.IntN(8) {
		from := r.Int64N(190)
		s = append(s, span{from, from + 1 + r.Int64N(199-from)})
	}
	return s
}

// The interval arithmetic of the timeline and the fractions agrees with
// a nanosecond-by-nanosecond model on random spans.
func TestSpanArithmetic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		a, b := union(randomSpans(r)), union(randomSpans(r))
		na, nb := naive(a), naive(b)
		sub, inter := naive(subtract(a, b)), naive(intersect(a, b))
		for ns := range na {
			if sub[ns] != (na[ns] && !nb[ns]) || inter[ns] != (na[ns] && nb[ns]) {
				t.Fatalf("case %d, ns %d: a %v, b %v: a−b %v, a∩b %v", i, ns, a, b, subtract(a, b), intersect(a, b))
			}
		}
		if got := subtract(a, b); length(got)+length(intersect(a, b)) != length(a) {
			t.Fatalf("case %d: |a−b| + |a∩b| != |a|", i)
		}
	}
}

// coarsen keeps at most max spans by closing the shortest gaps, and
// covers everything it was given.
func TestCoarsen(t *testing.T) {
	s := []span{{0, 10}, {12, 20}, {30, 40}, {41, 50}, {90, 100}}
	got := coarsen(append([]span(nil), s...), 3)
	want := []span{{0, 20}, {30, 50}, {90, 100}}
	if len(got) != len(want) {
		t.Fatalf("coarsen: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("coarsen: %v, want %v", got, want)
		}
	}
	if got := coarsen(s[:2], 3); len(got) != 2 {
		t.Errorf("coarsen of 2 spans to at most 3: %v", got)
	}
}
