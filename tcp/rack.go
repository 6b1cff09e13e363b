package tcp

import (
	"time"

	"github.com/openmrc/mrc/mtime"
)

// RACK-TLP (RFC 8985), as Linux runs it by default since 4.18: loss
// detection by time (a segment is lost once one sent after it has been
// delivered and a reordering window has passed) and a tail loss probe
// that makes the receiver's SACKs reveal a lost tail in two round trips
// instead of a retransmission timeout.

// rack is the sender's RACK-TLP state.
type rack struct {
	xmit   mtime.Time    // RACK.xmit_ts: the latest send time of a delivered segment
	end    uint64        // RACK.end_seq of that segment, for ties
	rtt    time.Duration // RACK.rtt: the RTT of that delivery
	minRTT time.Duration // the least RTT sample
	at     mtime.Time    // the reordering timer, or Never

	tlpAt      mtime.Time // the probe timer, or Never
	tlpPending bool       // the probe timer fired: send a probe
	tlpOut     bool       // a probe is out and no ACK has come since
	// wcDelAck is the longest the peer may delay the ACK of a lone
	// segment that does not end a message (RFC 8985's WCDelAckT): its
	// delayed-ACK timeout, 0 if it acknowledges every segment at once or
	// the connection is a subflow (see sender.init).
	wcDelAck time.Duration
}

func (r *rack) init() { r.at, r.tlpAt = mtime.Never, mtime.Never }

// delivered records that g, sent at g.sentAt, was acknowledged or SACKed
// at now (RFC 8985 §6.2 step 2): a retransmission whose delivery comes
// sooner than the least RTT was delivered by its original, and does not
// count.
func (r *rack) delivered(now mtime.Time, g *seg) {
	rtt := now.Sub(g.sentAt)
	if g.retx && rtt < r.minRTT {
		return
	}
	if g.sentAt > r.xmit || g.sentAt == r.xmit && g.end > r.end {
		r.xmit, r.end, r.rtt = g.sentAt, g.end, rtt
	}
}

// reoWnd is RACK's reordering window: a quarter of the least RTT (RFC
// 8985 §6.2 step 4's default).
func (r *rack) reoWnd() time.Duration { return r.minRTT / 4 }

// detect declares lost every segment in pipe sent before the latest
// delivered one whose reordering window has passed, and arms the
// reordering timer for the first that has not (RFC 8985 §6.2 step 5).
// Segments are in sequence order, which is send order for first
// transmissions, so the scan stops at the first one not SACKed and sent
// after RACK.xmit_ts: everything above it was sent later still. It
// reports whether it declared any lost.
func (s *sender) detect(now mtime.Time) bool {
	r := &s.rack
	r.at = mtime.Never
	found := false
	for i := range s.segs.Len() {
		g := s.segs.At(i)
		if g.sacked || g.lost {
			continue
		}
		if g.sentAt > r.xmit || g.sentAt == r.xmit && g.end >= r.end {
			if !g.retx {
				break
			}
			continue
		}
		if !g.inPipe {
			continue
		}
		if deadline := g.sentAt.Add(r.rtt + r.reoWnd()); deadline <= now {
			s.declareLost(g)
			found = true
		} else {
			r.at = mtime.Min(r.at, deadline)
		}
	}
	return found
}

// armTLP schedules the tail loss probe after sending or on an ACK, while
// data is outstanding outside loss recovery: PTO = 2·SRTT, plus the
// peer's delayed-ACK timeout when one segment is in flight whose ACK the
// peer may hold back that long (RFC 8985 §7.2's WCDelAckT; not for a
// segment that ends a message, which the receiver acknowledges at
// once), 1 s before an RTT sample, never after the RTO.
func (s *sender) armTLP(now mtime.Time) {
	r := &s.rack
	r.tlpAt = mtime.Never
	if s.una >= s.nxt || s.inRecovery || r.tlpOut || r.tlpPending {
		return
	}
	pto := time.Second
	if s.hasRTT {
		pto = max(2*s.srtt, time.Microsecond)
		if s.segs.Len() == 1 && !s.segs.At(0).psh {
			pto += r.wcDelAck
		}
	}
	if at := now.Add(pto); at < s.rtoAt {
		r.tlpAt = at
	}
}

// probe returns the tail loss probe's segment (RFC 8985 §7.3): new data
// if there is some (whatever cwnd says), else the highest segment sent
// again.
func (q *Conn) probe(now mtime.Time) (*seg, bool) {
	s := &q.snd
	s.rack.tlpPending, s.rack.tlpOut = false, true
	s.rtoAt = now.Add(s.rto)
	q.stats.TailProbes++
	if s.nxt < s.end {
		return q.newSeg(now, true), true
	}
	var g *seg
	for i := s.segs.Len() - 1; i >= 0 && g == nil; i-- {
		if h := s.segs.At(i); !h.sacked {
			g = h
		}
	}
	if g == nil {
		return nil, false
	}
	if g.lost {
		g.lost = false
		s.lostPending--
	}
	if !g.inPipe {
		g.inPipe = true
		s.pipe += g.len()
		s.retxOut++
	} else if !g.retx {
		s.retxOut++
	}
	g.retx, g.sentAt, g.retxNxt = true, now, s.nxt
	q.stats.Retransmits++
	return g, false
}
