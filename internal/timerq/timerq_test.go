package timerq

import (
	"math/rand/v2"
	"testing"

	"github.com/openmrc/mrc/mtime"
)

type item struct {
	id int
	n  Node
}

func (x *item) TimerNode() *Node { return &x.n }

// TestAgainstModel sets, moves and removes random deadlines and checks the
// heap's minimum against a plain scan after every step.
func TestAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	items := make([]*item, 50)
	for i := range items {
		items[i] = &item{id: i}
		items[i].n.Init()
	}
	var h Heap[*item]
	for step := range 20000 {
		x := items[r.IntN(len(items))]
		switch r.IntN(4) {
		case 0:
			h.Remove(x)
		default:
			h.Set(x, mtime.Time(r.IntN(1000)))
		}
		want := mtime.Never
		queued := 0
		for _, it := range items {
			if it.n.Queued() {
				queued++
				want = min(want, it.n.Key())
			}
		}
		if h.Min() != want || h.Len() != queued {
			t.Fatalf("step %d: Min %v Len %d, model %v %d", step, h.Min(), h.Len(), want, queued)
		}
		if top, ok := h.Peek(); ok && top.n.Key() != want {
			t.Fatalf("step %d: Peek has key %v, want %v", step, top.n.Key(), want)
		}
	}
}

// bigItem spaces the nodes as an endpoint's QPs are spaced (about 1 KB
// apart), so reading a node is a cache miss unless the heap avoids it.
type bigItem struct {
	n Node
	_ [1016]byte
}

func (x *bigItem) TimerNode() *Node { return &x.n }

// BenchmarkSet moves random items of a 256-item heap (an endpoint's QPs in
// the default scenario) to random deadlines, spread over 256 heaps (64 MiB) so
// that the items are not all in cache: ns per Set.
func BenchmarkSet(b *testing.B) {
	const heaps, per = 256, 256
	items := make([]bigItem, heaps*per)
	hs := make([]Heap[*bigItem], heaps)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range items {
		items[i].n.Init()
		hs[i/per].Set(&items[i], mtime.Time(r.IntN(1e6)))
	}
	b.ResetTimer()
	for i := range b.N {
		j := r.IntN(len(items))
		hs[j/per].Set(&items[j], mtime.Time(i+r.IntN(1e6)))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/set")
}
