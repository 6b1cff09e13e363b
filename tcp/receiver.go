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
// it, ACKs of both CE states merge.
const maxHeldAcks = 16

// heldAck is an ACK decided but not yet sent: its cumulative ACK and ECE.
type heldAck struct {
	ack uint64
	ece bool
}

// receiver is the receiving half of a connection. It delays ACKs as
// Linux does (RFC 5681 §4.2, docs/tcp.md): an ACK for every second
// full-sized segment, at once where loss recovery or the sender's window
// needs one, and otherwise when the delayed-ACK timer fires. Its ECE flag
// echoes DCTCP.CE, whether the latest data segment was CE-marked (RFC
// 8257 §3.2): a change of that state is acknowledged at once, and an ACK
// owed for the segments before it is held and sent first with the old
// state, so no ACK covers segments of both (the two ACKs RFC 8257 allows
// and Linux sends), and the sender's alpha stays exact.
type receiver struct {
	stream   reasm.Stream // what has arrived; messages end at PSH
	latest   reasm.Span   // the most recently received segment
	recvs    fifo.Queue[uint64]
	unposted int // messages complete before a receive was posted

	ackPending bool       // an ACK is due now
	delackAt   mtime.Time // the delayed-ACK timer, or Never
	acked      uint64     // the cumulative ACK last sent
	ce         bool       // DCTCP.CE
	quick      int        // quick ACKs left: ACKs of new data sent at once
	lastData   mtime.Time // when the latest data segment arrived
	seenData   bool
	held       fifo.Queue[heldAck]
}

// owed reports whether the receiver owes an ACK, now or at its timer.
func (r *receiver) owed() bool { return r.ackPending || r.delackAt != mtime.Never }

// ackNow makes the ACK owed, if any, or a new one, due now.
func (r *receiver) ackNow() { r.ackPending, r.delackAt = true, mtime.Never }

// onData takes in the segment [start, end), psh if it ends a message, ce
// if it arrived CE-marked, and decides when to acknowledge it.
func (q *Conn) onData(now mtime.Time, g span, psh, ce bool) {
	r, c := &q.rcv, &q.ep.cfg
	if ce {
		q.stats.CEReceived++
	}
	immediate := c.DisableDelayedACK
	if ce != r.ce {
		if r.owed() && r.held.Len() < maxHeldAcks {
			r.held.Push(heldAck{ack: r.stream.Next(), ece: r.ce})
			r.ackPending, r.delackAt = false, mtime.Never
		}
		r.ce, immediate = ce, true
	}
	// Linux's quickack mode: the first data of a connection, and data
	// after an idle spell longer than the RTO, is acknowledged at once
	// for a few ACKs (tcp_incr_quickack), so the peer's window grows
	// without waiting on the timer.
	if !r.seenData || now.Sub(r.lastData) > q.snd.rto {
		r.quick = max(r.quick, quickAcks(c.MSS))
		r.seenData = true
	}
	r.lastData = now
	next, holes := r.stream.Next(), len(r.stream.Ranges()) > 0
	if !r.stream.Add(reasm.Span{Start: g.start, End: g.end}, psh) {
		q.stats.Duplicates++
		r.ackNow() // a duplicate: the peer resent for want of an ACK
		return
	}
	q.stats.DataReceived++
	r.latest = reasm.Span{Start: g.start, End: g.end}
	q.stats.PayloadReceived = r.stream.Received()
	q.deliver(now)
	switch {
	case immediate, g.start != next, holes, psh, r.quick > 0, r.stream.Next()-r.acked > uint64(c.MSS):
		// Out of order or filling a hole (RFC 5681 §4.2 SHOULDs), a
		// message end the application reads at once (Linux acknowledges
		// a pushed segment once it is read, tcp_cleanup_rbuf), quickack,
		// or a second full segment.
		r.ackNow()
	case !r.owed():
		r.delackAt = now.Add(c.DelAck)
	}
}

// quickAcks is the number of quick ACKs Linux gives a connection
// (tcp_incr_quickack): half its receive window in segments, at least 2
// and at most TCP_MAX_QUICKACKS. The window here is the 65535 bytes
// every segment advertises.
func quickAcks(mss int) int { return min(max(0xFFFF/(2*mss), 2), maxQuickAcks) }

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
	a, ok := r.held.Pop()
	if !ok {
		if !r.ackPending {
			return heldAck{}, false
		}
		r.ackPending = false
		a = heldAck{ack: r.stream.Next(), ece: r.ce}
	}
	if a.ack > r.acked {
		r.acked = a.ack
		r.quick = max(r.quick-1, 0)
	}
	return a, true
}

// onDelAck fires the delayed-ACK timer, if it is due at now.
func (q *Conn) onDelAck(now mtime.Time) {
	if r := &q.rcv; r.delackAt <= now {
		r.ackNow()
		q.stats.DelayedAcks++
	}
}
