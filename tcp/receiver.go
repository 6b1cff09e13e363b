package tcp

import (
	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/internal/reasm"
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
	stream   reasm.Stream // what has arrived; messages end at PSH
	latest   reasm.Span   // the most recently received segment
	recvs    fifo.Queue[uint64]
	unposted int // messages complete before a receive was posted

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
			r.held.Push(heldAck{ack: r.stream.Next(), ece: r.ackECE})
		}
	}
	r.ackPending, r.ackECE = true, ce
	if !r.stream.Add(reasm.Span{Start: g.start, End: g.end}, psh) {
		q.stats.Duplicates++
		return
	}
	q.stats.DataReceived++
	r.latest = reasm.Span{Start: g.start, End: g.end}
	q.stats.PayloadReceived = r.stream.Received()
	q.deliver(now)
}

// deliver completes the messages that are now in order.
func (q *Conn) deliver(now mtime.Time) {
	r := &q.rcv
	for {
		n, ok := r.stream.Message()
		if !ok {
			return
		}
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
	ooo := r.stream.Ranges()
	for i, s := range ooo {
		if s.Start <= r.latest.Start && r.latest.End <= s.End {
			first = i
			b[0] = span{s.Start, s.End}
			n = 1
			break
		}
	}
	for i := len(ooo) - 1; i >= 0 && n < MaxSACKBlocks; i-- {
		if i != first {
			b[n] = span{ooo[i].Start, ooo[i].End}
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
		return heldAck{ack: r.stream.Next(), ece: r.ackECE}, true
	}
	return heldAck{}, false
}
