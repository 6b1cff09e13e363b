package rxwin

import (
	"math/rand/v2"
	"testing"

	"github.com/openmrc/mrc/internal/psn"
)

// model is the obviously-correct reference: a set of received PSNs.
type model struct {
	next psn.PSN
	size int
	got  map[psn.PSN]bool
}

func (m *model) mark(p psn.PSN) Result {
	d := p.Sub(m.next)
	switch {
	case d < 0:
		return Old
	case d >= m.size:
		return OutOfWindow
	case m.got[p]:
		return Duplicate
	}
	m.got[p] = true
	for m.got[m.next] {
		delete(m.got, m.next)
		m.next = m.next.Add(1)
	}
	return Accepted
}

func (m *model) has(p psn.PSN) bool {
	d := p.Sub(m.next)
	return d < 0 || (d < m.size && m.got[p])
}

func (m *model) bitmap(base psn.PSN) uint64 {
	var b uint64
	for k := range 64 {
		if m.has(base.Add(k)) {
			b |= 1 << k
		}
	}
	return b
}

// TestAgainstModel drives Window and the set model with the same random
// arrivals (reordered, duplicated, some beyond the window, across the 24-bit
// wrap) and requires identical answers.
func TestAgainstModel(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		size := []int{64, 100, 128, 1024, 4096}[r.IntN(5)]
		start := psn.PSN(r.Uint32() & psn.Mask)
		if seed%3 == 0 {
			start = psn.Mask - psn.PSN(r.IntN(500))
		}
		w := New(start, size)
		m := &model{next: start, size: size, got: map[psn.PSN]bool{}}
		sent := start
		for step := range 3000 {
			// Send ahead, arriving out of order within a spread.
			spread := 1 + r.IntN(size+size/4)
			p := m.next.Add(r.IntN(spread))
			if r.IntN(10) == 0 {
				p = m.next.Add(-r.IntN(50)) // old / duplicate
			}
			if p.Sub(sent) > 0 {
				sent = p
			}
			got, want := w.Mark(p), m.mark(p)
			if got != want {
				t.Fatalf("seed %d step %d: Mark(%d) = %v, model %v", seed, step, p, got, want)
			}
			if w.Next() != m.next {
				t.Fatalf("seed %d step %d: Next = %d, model %d", seed, step, w.Next(), m.next)
			}
			if w.Ahead() != len(m.got) {
				t.Fatalf("seed %d step %d: Ahead = %d, model %d", seed, step, w.Ahead(), len(m.got))
			}
			base := m.next.Add(r.IntN(size+128) - 64)
			if got, want := w.Bitmap(base), m.bitmap(base); got != want {
				t.Fatalf("seed %d step %d: Bitmap(next%+d) = %064b\nmodel                 %064b", seed, step, base.Sub(m.next), got, want)
			}
		}
	}
}

// TestDigestExample is the SACK example of digest §3.6: PSNs 0–11 sent,
// 5 and 8 lost: cack_psn = 4 and the bitmap from 5 reads 0110111 from bit 0
// (the LSB) up, then zeros.
func TestDigestExample(t *testing.T) {
	w := New(0, 1024)
	for p := range psn.PSN(12) {
		if p != 5 && p != 8 {
			w.Mark(p)
		}
	}
	if cack := w.Next().Add(-1); cack != 4 {
		t.Fatalf("cack = %d, want 4", cack)
	}
	const want = 0b1110110 // bit 0 (PSN 5) is the LSB
	if got := w.Bitmap(5); got != want {
		t.Fatalf("bitmap = %064b, want %064b", got, uint64(want))
	}
}

func BenchmarkMarkInOrder(b *testing.B) {
	w := New(0, 1024)
	p := psn.PSN(0)
	b.ReportAllocs()
	for b.Loop() {
		w.Mark(p)
		p = p.Add(1)
	}
}
