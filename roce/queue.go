package roce

import (
	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
)

// eventQueue is a FIFO of events that reuses its storage.
type eventQueue struct {
	buf  []mrc.Event
	head int
}

func (q *eventQueue) push(ev mrc.Event) { q.buf = append(q.buf, ev) }

func (q *eventQueue) pop() (mrc.Event, bool) {
	if q.head == len(q.buf) {
		return mrc.Event{}, false
	}
	ev := q.buf[q.head]
	q.buf[q.head] = mrc.Event{}
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return ev, true
}

// qpQueue is a FIFO of QPs that reuses its storage.
type qpQueue struct {
	buf  []*QP
	head int
}

func (q *qpQueue) len() int { return len(q.buf) - q.head }

func (q *qpQueue) push(x *QP) {
	if q.head > 0 && q.head >= len(q.buf)/2 {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, x)
}

func (q *qpQueue) pop() *QP {
	x := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	return x
}

// timerHeap is a binary min-heap of QPs keyed by QP.heapKey; each QP
// knows its index, so its key can move either way in place.
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

// set inserts q with key t, or moves it; t == mtime.Never removes it.
func (h *timerHeap) set(q *QP, t mtime.Time) {
	if t == mtime.Never {
		h.remove(q)
		return
	}
	if q.heapIdx >= 0 && q.heapKey == t {
		return
	}
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
	i := q.heapIdx
	if i < 0 {
		return
	}
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
	q.heapIdx, q.heapKey = -1, mtime.Never
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
