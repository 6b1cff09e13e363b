package tcp

import (
	"slices"

	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// span is a range [start, end) of stream offsets.
type span struct{ start, end uint64 }

// maxHeldAcks bounds the ACKs a receiver holds back for a busy port; past
// it, ACKs of like CE state merge.
const maxHeldAcks = 16

// heldAck is an ACK decided but not yet sent: its cumulative ACK and ECE.
type heldAck struct {
	ack uint64
	ece bool
}

// receiver is the receiving half of a connection. It acknowledges every
// segment (no delayed ACKs, docs/tcp.md), and its ECE flag echoes
// exactly whether the segments an ACK covers were CE-marked, as DCTCP's
// receiver does (RFC 8257): when the CE state changes while an ACK
// is pending, the pending one is held and sent first.
type receiver struct {
	nxt      uint64   // next in-order byte
	ooo      []span   // received above nxt: disjoint, ascending
	oooLen   uint64   // bytes in ooo
	latest   span     // the most recently received segment
	msgEnds  []uint64 // ends of messages received (PSH) above nxt, ascending
	recvs    fifo.Queue[uint64]
	unposted int // messages complete before a receive was posted
	msgStart uint64

	ackPending bool
	ackECE     bool
	held       fifo.Queue[heldAck]
}

// onData takes in the segment [start, end), psh if it ends a message, ce
// if it arrived CE-marked, and queues its ACK.
func (q *Conn) onData(now mtime.Time, g span, psh, ce bool) {
	r := &q.rcv
	if ce {
		q.stats.CEReceived++
	}
	if r.ackPending && r.ackECE != ce {
		if r.held.Len() < maxHeldAcks {
			r.held.Push(heldAck{ack: r.nxt, ece: r.ackECE})
		}
	}
	r.ackPending, r.ackECE = true, ce
	if g.end <= r.nxt {
		q.stats.Duplicates++
		return
	}
	q.stats.DataReceived++
	r.latest = g
	if psh {
		if i, found := slices.BinarySearch(r.msgEnds, g.end); !found {
			r.msgEnds = slices.Insert(r.msgEnds, i, g.end)
		}
	}
	if g.start <= r.nxt {
		r.nxt = g.end
		k := 0
		for k < len(r.ooo) && r.ooo[k].start <= r.nxt {
			r.nxt = max(r.nxt, r.ooo[k].end)
			r.oooLen -= r.ooo[k].end - r.ooo[k].start
			k++
		}
		r.ooo = append(r.ooo[:0], r.ooo[k:]...)
	} else {
		r.insert(g)
	}
	q.stats.PayloadReceived = r.nxt + r.oooLen
	q.deliver(now)
}

// insert adds g, above nxt, to the out-of-order ranges, merging.
func (r *receiver) insert(g span) {
	i, _ := slices.BinarySearchFunc(r.ooo, g.start, func(s span, x uint64) int {
		switch {
		case s.end < x:
			return -1
		case s.start > x:
			return 1
		}
		return 0
	})
	j := i
	for j < len(r.ooo) && r.ooo[j].start <= g.end {
		g.start, g.end = min(g.start, r.ooo[j].start), max(g.end, r.ooo[j].end)
		r.oooLen -= r.ooo[j].end - r.ooo[j].start
		j++
	}
	r.oooLen += g.end - g.start
	r.ooo = slices.Replace(r.ooo, i, j, g)
}

// deliver completes the messages that are now in order.
func (q *Conn) deliver(now mtime.Time) {
	r := &q.rcv
	for len(r.msgEnds) > 0 && r.msgEnds[0] <= r.nxt {
		end := r.msgEnds[0]
		r.msgEnds = slices.Delete(r.msgEnds, 0, 1)
		n := end - r.msgStart
		r.msgStart = end
		id, ok := r.recvs.Pop()
		if !ok {
			r.unposted++
			continue
		}
		q.complete(now, id, n)
	}
}

func (q *Conn) complete(now mtime.Time, id, n uint64) {
	q.stats.ImmsDelivered++
	q.ep.emit(verbs.Event{Kind: verbs.EventRecvImm, Time: now, QPN: q.qpn, WRID: id, Bytes: n})
}

// sackBlocks fills b with the SACK blocks of the next ACK: the range
// holding the most recent segment first, then the others from the
// highest down (RFC 2018 §4), and returns how many.
func (r *receiver) sackBlocks(b *[MaxSACKBlocks]span) int {
	n := 0
	first := -1
	for i, s := range r.ooo {
		if s.start <= r.latest.start && r.latest.end <= s.end {
			first = i
			b[0] = s
			n = 1
			break
		}
	}
	for i := len(r.ooo) - 1; i >= 0 && n < MaxSACKBlocks; i-- {
		if i != first {
			b[n] = r.ooo[i]
			n++
		}
	}
	return n
}

// nextAck returns the next ACK to send, if one is due.
func (r *receiver) nextAck() (heldAck, bool) {
	if a, ok := r.held.Pop(); ok {
		return a, true
	}
	if r.ackPending {
		r.ackPending = false
		return heldAck{ack: r.nxt, ece: r.ackECE}, true
	}
	return heldAck{}, false
}
