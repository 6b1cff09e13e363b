package psn

import (
	"math/rand/v2"
	"testing"
)

func TestAddWraps(t *testing.T) {
	cases := []struct {
		p    PSN
		n    int
		want PSN
	}{
		{0, 1, 1},
		{Mask, 1, 0},
		{0, -1, Mask},
		{10, -20, Mask - 9},
		{Mask - 2, 5, 2},
	}
	for _, c := range cases {
		if got := c.p.Add(c.n); got != c.want {
			t.Errorf("%d.Add(%d) = %d, want %d", c.p, c.n, got, c.want)
		}
	}
}

func TestSubIsInverseOfAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		p := PSN(r.Uint32() & Mask)
		n := r.IntN(1<<23) - 1<<22
		q := p.Add(n)
		if d := q.Sub(p); d != n {
			t.Fatalf("(%d+%d).Sub(%d) = %d", p, n, p, d)
		}
		if (n < 0) != q.Less(p) {
			t.Fatalf("Less disagrees with sign for p=%d n=%d", p, n)
		}
	}
}

func TestInWindowAcrossWrap(t *testing.T) {
	lo := PSN(Mask - 5)
	for i := -3; i < 20; i++ {
		want := i >= 0 && i < 10
		if got := lo.Add(i).InWindow(lo, 10); got != want {
			t.Errorf("offset %d: InWindow = %v, want %v", i, got, want)
		}
	}
}
