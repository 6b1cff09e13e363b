// Package rxwin is the responder's PSN tracking window (digest §3.3): which
// PSNs in [next, next+size) have arrived, the cumulative point next, and the
// 64-bit SACK bitmap at any base.
package rxwin

import "github.com/openmrc/mrc/internal/psn"

// Result says what Mark did with a PSN.
type Result uint8

const (
	// Accepted: the PSN was in the window and had not been seen.
	Accepted Result = iota
	// Duplicate: the PSN was in the window and had already arrived.
	Duplicate
	// Old: the PSN is before next, so it was cumulatively received.
	Old
	// OutOfWindow: the PSN is at or beyond next+size.
	OutOfWindow
)

// Window tracks received PSNs. It is not safe for concurrent use. The zero
// value is not usable; call New.
type Window struct {
	next  psn.PSN  // first PSN not yet received in order (cack_psn+1)
	size  int      // tracking range in PSNs (MPR×128)
	mask  int      // len(ring)*64-1; ring covers at least size PSNs
	ring  []uint64 // bit (p&mask) is set when p in [next, next+size) arrived
	ahead int      // PSNs received beyond next (the SACK ooo_count)
}

// New returns a window that expects start first and tracks size PSNs.
func New(start psn.PSN, size int) *Window {
	if size < 64 {
		size = 64
	}
	capBits := 64
	for capBits < size {
		capBits <<= 1
	}
	return &Window{next: start, size: size, mask: capBits - 1, ring: make([]uint64, capBits/64)}
}

// Next returns the first PSN not yet received in order; Next()-1 is the
// cumulative acknowledgement point (cack_psn).
func (w *Window) Next() psn.PSN { return w.next }

// Size returns the tracking range in PSNs.
func (w *Window) Size() int { return w.size }

// Ahead returns how many PSNs beyond Next have arrived.
func (w *Window) Ahead() int { return w.ahead }

func (w *Window) bit(p psn.PSN) (word int, m uint64) {
	i := int(p) & w.mask
	return i >> 6, 1 << (i & 63)
}

// Has reports whether p has arrived. PSNs before Next have; PSNs at or beyond
// Next+Size have not.
func (w *Window) Has(p psn.PSN) bool {
	d := p.Sub(w.next)
	if d < 0 {
		return true
	}
	if d >= w.size {
		return false
	}
	i, m := w.bit(p)
	return w.ring[i]&m != 0
}

// Mark records the arrival of p and advances Next over every PSN that is now
// received in order.
func (w *Window) Mark(p psn.PSN) Result {
	d := p.Sub(w.next)
	switch {
	case d < 0:
		return Old
	case d >= w.size:
		return OutOfWindow
	}
	i, m := w.bit(p)
	if w.ring[i]&m != 0 {
		return Duplicate
	}
	if d > 0 {
		w.ring[i] |= m
		w.ahead++
		return Accepted
	}
	// p == next: slide over the run of PSNs already received after it.
	w.next = w.next.Add(1)
	for w.ahead > 0 {
		i, m := w.bit(w.next)
		if w.ring[i]&m == 0 {
			break
		}
		w.ring[i] &^= m
		w.ahead--
		w.next = w.next.Add(1)
	}
	return Accepted
}

// Bitmap returns the arrival state of the 64 PSNs starting at base, in the
// SACK wire order: the least significant bit is base, the most base+63.
// PSNs before Next count as received; PSNs beyond the window as not.
func (w *Window) Bitmap(base psn.PSN) uint64 {
	d := base.Sub(w.next)
	var b uint64 // bit k is base+k
	pre := 0     // leading PSNs that precede next, hence received
	if d < 0 {
		if d <= -64 {
			return ^uint64(0)
		}
		pre = -d
		b = 1<<uint(pre) - 1
		d = 0
	}
	n := min(64-pre, w.size-d) // PSNs from base+pre still inside the window
	start := int(w.next.Add(d)) & w.mask
	for k := 0; k < n; {
		idx := (start + k) & w.mask
		word, off := idx>>6, idx&63
		chunk := w.ring[word] >> uint(off)
		take := min(64-off, n-k)
		if take < 64 {
			chunk &= 1<<uint(take) - 1
		}
		b |= chunk << uint(pre+k)
		k += take
	}
	return b
}
