// Package qptable hands out QP numbers and finds a QP by its number.
package qptable

import "errors"

// ErrFull is returned when every QP number is in use.
var ErrFull = errors.New("no free QP number")

// First is the lowest QP number handed out: 0–2 are reserved (QPN 2
// addresses endpoint operations, digest §3.7).
const First = 0x100

// Table maps QP numbers to QPs. The zero value is empty. It is not safe
// for concurrent use.
type Table[T comparable] struct {
	qps  []T      // index qpn-First; the zero T marks a free number
	free []uint32 // released numbers, reused first
}

// Add stores q under a free QP number, of which there are at most max, and
// returns the number.
func (t *Table[T]) Add(q T, max int) (uint32, error) {
	var qpn uint32
	if n := len(t.free); n > 0 {
		qpn = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if len(t.qps) >= max {
			return 0, ErrFull
		}
		qpn = uint32(First + len(t.qps))
		var zero T
		t.qps = append(t.qps, zero)
	}
	t.qps[qpn-First] = q
	return qpn, nil
}

// Get returns the QP with number qpn, or the zero T.
func (t *Table[T]) Get(qpn uint32) T {
	var zero T
	i := int(qpn) - First
	if i < 0 || i >= len(t.qps) {
		return zero
	}
	return t.qps[i]
}

// Remove frees qpn if q holds it and reports whether it did.
func (t *Table[T]) Remove(qpn uint32, q T) bool {
	var zero T
	if q == zero || t.Get(qpn) != q {
		return false
	}
	t.qps[qpn-First] = zero
	t.free = append(t.free, qpn)
	return true
}

// All calls f for every QP in number order.
func (t *Table[T]) All(f func(T)) {
	var zero T
	for _, q := range t.qps {
		if q != zero {
			f(q)
		}
	}
}

// Len returns how many QPs the table holds.
func (t *Table[T]) Len() int { return len(t.qps) - len(t.free) }
