package dumbbell

import (
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// Pair is the steady-state loop of the baselines' benchmarks: two hosts
// back to back with no network. A step moves one data segment from A to
// B and everything it triggers back, then advances virtual time by 80 ns
// and runs A's timers if due.
type Pair struct {
	A, B       Host
	bufA, bufB []byte
	Now        mtime.Time
	// Data counts the data segments moved.
	Data int
	// WriteDone is called for each verbs.EventWriteDone of A (to repost).
	WriteDone func()
}

// NewPair returns the loop of a and b, with transmit buffers of HeaderRoom.
func NewPair(a, b Host, writeDone func()) *Pair {
	return &Pair{A: a, B: b, bufA: make([]byte, HeaderRoom), bufB: make([]byte, HeaderRoom), WriteDone: writeDone}
}

// Step moves one data segment and everything it triggers.
func (l *Pair) Step() {
	a, b := l.A, l.B
	if tx, ok := a.PollTransmit(l.Now, 1, l.bufA); ok {
		l.Data++
		b.HandleDatagram(l.Now, 0, l.bufA[:tx.Len], tx.WireLen)
	}
	for {
		tx, ok := b.PollTransmit(l.Now, 1, l.bufB)
		if !ok {
			break
		}
		a.HandleDatagram(l.Now, 0, l.bufB[:tx.Len], tx.WireLen)
	}
	for {
		ev, ok := a.PollEvent()
		if !ok {
			break
		}
		if ev.Kind == verbs.EventWriteDone {
			l.WriteDone()
		}
	}
	for _, ok := b.PollEvent(); ok; _, ok = b.PollEvent() {
	}
	l.Now += 80
	if l.Now >= a.NextTimeout() {
		a.HandleTimeout(l.Now)
	}
	if l.Now >= b.NextTimeout() {
		b.HandleTimeout(l.Now) // a delayed ACK goes out in the next step
	}
}
