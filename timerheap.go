package mrc

import "github.com/openmrc/mrc/mtime"

// timerHeap is a binary min-heap of QPs keyed by QP.heapKey, with each QP
// knowing its index so that its key can change in place.
type timerHeap struct{ qs []*QP }

func (h *timerHeap) min() mtime.Time {
	if len(h.qs) == 0 {
		return mtime.Never
	}
	return h.qs[0].heapKey
}

func (h *timerHeap) peek() *QP {
	if len(h.qs) == 0 {
		return nil
	}
	return h.qs[0]
}

func (h *timerHeap) pop() *QP {
	q := h.qs[0]
	h.removeAt(0)
	return q
}

// set inserts q with key t, or moves it if already present.
func (h *timerHeap) set(q *QP, t mtime.Time) {
	q.heapKey = t
	if q.heapIdx < 0 {
		q.heapIdx = len(h.qs)
		h.qs = append(h.qs, q)
		h.up(q.heapIdx)
		return
	}
	h.up(q.heapIdx)
	h.down(q.heapIdx)
}

func (h *timerHeap) remove(q *QP) {
	if q.heapIdx >= 0 {
		h.removeAt(q.heapIdx)
	}
}

func (h *timerHeap) removeAt(i int) {
	q := h.qs[i]
	last := len(h.qs) - 1
	if i != last {
		h.swap(i, last)
	}
	h.qs[last] = nil
	h.qs = h.qs[:last]
	if i != last {
		h.up(i)
		h.down(i)
	}
	q.heapIdx = -1
	q.heapKey = mtime.Never
}

func (h *timerHeap) swap(i, j int) {
	h.qs[i], h.qs[j] = h.qs[j], h.qs[i]
	h.qs[i].heapIdx = i
	h.qs[j].heapIdx = j
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.qs[p].heapKey <= h.qs[i].heapKey {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *timerHeap) down(i int) {
	n := len(h.qs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.qs[r].heapKey < h.qs[l].heapKey {
			m = r
		}
		if h.qs[i].heapKey <= h.qs[m].heapKey {
			return
		}
		h.swap(i, m)
		i = m
	}
}
