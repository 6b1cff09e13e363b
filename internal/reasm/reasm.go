// Package reasm reassembles a byte stream from ranges that arrive in any
// order, more than once or overlapping, and finds the ends of the
// messages it carries: the receiving half of package tcp's connections
// and of package mptcp's data level. A Stream's zero value is an empty
// stream starting at offset 0. It is not safe for concurrent use.
package reasm

import "slices"

// Span is the range [Start, End) of stream offsets.
type Span struct{ Start, End uint64 }

// Stream holds what has arrived of a stream: everything below Next, and
// disjoint ranges above it.
type Stream struct {
	nxt      uint64   // next in-order byte
	ooo      []Span   // received above nxt: disjoint, not adjacent, ascending
	oooLen   uint64   // bytes in ooo
	msgEnds  []uint64 // ends of messages received above the last one popped, ascending
	msgStart uint64   // where the next message starts
}

// Next returns the offset of the first byte not yet received: every byte
// below it has arrived.
func (s *Stream) Next() uint64 { return s.nxt }

// Received returns how many bytes have arrived, each counted once, in
// order or not.
func (s *Stream) Received() uint64 { return s.nxt + s.oooLen }

// Ranges returns the ranges received above Next, ascending. The slice is
// the stream's own: it is valid until the next Add.
func (s *Stream) Ranges() []Span { return s.ooo }

// Add takes in the bytes g; msgEnd says a message ends at g.End. It
// reports false, and changes nothing, if every byte of g had arrived
// below Next already (a duplicate).
func (s *Stream) Add(g Span, msgEnd bool) bool {
	if g.End <= s.nxt {
		return false
	}
	if msgEnd {
		if i, found := slices.BinarySearch(s.msgEnds, g.End); !found {
			s.msgEnds = slices.Insert(s.msgEnds, i, g.End)
		}
	}
	if g.Start > s.nxt {
		s.insert(g)
		return true
	}
	s.nxt = g.End
	k := 0
	for k < len(s.ooo) && s.ooo[k].Start <= s.nxt {
		s.nxt = max(s.nxt, s.ooo[k].End)
		s.oooLen -= s.ooo[k].End - s.ooo[k].Start
		k++
	}
	s.ooo = append(s.ooo[:0], s.ooo[k:]...)
	return true
}

// insert adds g, above nxt, to the out-of-order ranges, merging.
func (s *Stream) insert(g Span) {
	i, _ := slices.BinarySearchFunc(s.ooo, g.Start, func(r Span, x uint64) int {
		switch {
		case r.End < x:
			return -1
		case r.Start > x:
			return 1
		}
		return 0
	})
	j := i
	for j < len(s.ooo) && s.ooo[j].Start <= g.End {
		g.Start, g.End = min(g.Start, s.ooo[j].Start), max(g.End, s.ooo[j].End)
		s.oooLen -= s.ooo[j].End - s.ooo[j].Start
		j++
	}
	s.oooLen += g.End - g.Start
	s.ooo = slices.Replace(s.ooo, i, j, g)
}

// Message returns the length of the next message that has arrived whole
// and in order, and removes it; ok is false if there is none.
func (s *Stream) Message() (n uint64, ok bool) {
	if len(s.msgEnds) == 0 || s.msgEnds[0] > s.nxt {
		return 0, false
	}
	end := s.msgEnds[0]
	s.msgEnds = slices.Delete(s.msgEnds, 0, 1)
	n, s.msgStart = end-s.msgStart, end
	return n, true
}
