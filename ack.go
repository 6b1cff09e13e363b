package mrc

import (
	"math/bits"
	"time"

	"github.com/openmrc/mrc/cc"
	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// acknowledge marks p acknowledged and returns its newly acked bytes.
func (s *sender) acknowledge(q *QP, now mtime.Time, p psn.PSN) int {
	r := s.rec(p)
	switch r.state {
	case pktInFlight:
		s.unlinkLoss(q, p)
		s.land(q, r.size)
	case pktLost:
		if r.rtx == 0 {
			q.stats.SpuriousRetrans++ // declared lost, yet the original arrived
		}
	case pktHeld:
	default:
		return 0
	}
	r.state = pktAcked
	s.ackedSentAt = max(s.ackedSentAt, r.sentAt)
	s.planeDelivered(q, r.slot, r.sentAt)
	q.tracePacket(now, trace.PacketAcked, p, r.slot, r.size, "")
	return int(r.size)
}

// onSACK processes a reliability SACK (digest §3.6).
func (s *sender) onSACK(q *QP, now mtime.Time, port int, sk *wire.SACK) {
	q.stats.SACKsReceived++
	cack := psn.PSN(sk.CackPSN)
	if why := s.checkSACK(q, sk); why != dropNone {
		q.ep.drop(now, &q.stats, q.qpn, why)
		return
	}
	inFlight := func(p psn.PSN) bool { return p.InWindow(s.una, s.nxt.Sub(s.una)) }

	// RTT from the packet that triggered the SACK, if the SACK can only
	// answer its latest transmission (rttsample.go; a probe's answer
	// names a PSN the probe did not carry: no sample).
	var rtt time.Duration
	s.rtxFlagged = s.rtxFlagged || sk.Rtx
	if q.ep.cfg.Timestamps {
		rtt = time.Duration(uint16(timestamp(now)-sk.CC.TxTimestamp)) << 7
	} else if trig := cack.Add(int(sk.AckPSNOffset)); inFlight(trig) && !sk.PR {
		if r := s.rec(trig); r.state == pktInFlight && r.answers(now, sk.Rtx, s.rtxFlagged, q.ep.cfg.longestRTT()) {
			// Without timestamps the field carries the responder's
			// hold (holdStamp); a peer that leaves it zero holds nothing.
			rtt = now.Sub(r.sentAt) - time.Duration(sk.CC.TxTimestamp)<<7
		}
	}
	if rtt > 0 {
		to := q.lossTimeout()
		s.sampleRTT(rtt)
		if q.lossTimeout() < to && s.lossHead != noPSN {
			q.timerDirty = true // the oldest packet's loss timer moved earlier
		}
	}

	newly := 0
	for inFlight(s.una) && !cack.Less(s.una) {
		newly += s.acknowledge(q, now, s.una)
		s.una = s.una.Add(1)
	}
	base := cack.Add(int(sk.SackOffset))
	for bm := sk.SackBitmap; bm != 0; {
		i := bits.TrailingZeros64(bm)
		bm &= bm - 1
		if p := base.Add(i); inFlight(p) {
			newly += s.acknowledge(q, now, p)
		}
	}
	for inFlight(s.una) && s.rec(s.una).state == pktAcked {
		s.una = s.una.Add(1)
	}

	if sk.MPR > 0 {
		// Never send beyond the window the peer advertises (digest
		// §3.3, Dynamic MPR).
		s.window = min(s.maxWindow, int(sk.MPR)*wire.MPRUnit)
	}
	s.resolveSuspects(q, now, sk)
	q.pathFeedback(now, sk)
	cwnd := q.ctl().Window()
	q.ctl().OnAck(now, cc.Ack{
		NewlyAcked:  newly,
		Inflight:    s.inflight,
		RTT:         rtt,
		ECN:         sk.M == wire.SackSkipOnce && !sk.PR,
		RcvCwndPen:  sk.CC.RcvCwndPen,
		RestoreCwnd: sk.CC.RC,
	})
	q.traceCwnd(now, cwnd)
	if s.paceAt > now {
		s.repace(q)
	}
	if newly > 0 {
		s.retries, s.backoffs = 0, 0
		s.lastProgress = now
		s.complete(q, now)
	}
	q.ep.markReady(q)
}

// checkSACK returns why sk cannot be a SACK of our peer's, or dropNone
// (docs/security.md). A SACK may acknowledge only PSNs sent: its
// cumulative point, its trigger and every bit of its bitmap lie before
// the next new PSN. The EV it reflects must be one of the QP's.
func (s *sender) checkSACK(q *QP, sk *wire.SACK) verbs.DropReason {
	if _, ok := q.slotOf(uint32(sk.Entropy)); !ok {
		return verbs.DropBadEV
	}
	cack := psn.PSN(sk.CackPSN)
	if !cack.Less(s.nxt) {
		return verbs.DropStale
	}
	if trig := cack.Add(int(sk.AckPSNOffset)); !sk.PR && !trig.Less(s.nxt) {
		return verbs.DropStale
	}
	if bm := sk.SackBitmap; bm != 0 {
		last := cack.Add(int(sk.SackOffset) + 63 - bits.LeadingZeros64(bm))
		if !last.Less(s.nxt) {
			return verbs.DropStale
		}
	}
	return dropNone
}

// credibleNACK reports whether a fatal NACK may end the QP: it names a
// PSN sent and not yet acknowledged, reflects one of the QP's EVs, and
// arrived on a plane the QP uses (its source address was checked in
// handle). A fatal NACK failing this is a forgery or a stray: one packet
// must not be able to end a connection.
func (s *sender) credibleNACK(q *QP, port int, nk *wire.NACK) bool {
	p := psn.PSN(nk.NackPSN)
	if !p.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(p).state == pktAcked {
		return false
	}
	_, ok := q.slotOf(uint32(nk.Entropy))
	return ok && q.evs.PlaneUp(port)
}

// pathFeedback applies what a SACK says about the EV it reflects (digest
// §3.5): an answered probe, an ECN mark, or ALWAYS_SKIP.
func (q *QP) pathFeedback(now mtime.Time, sk *wire.SACK) {
	slot, ok := q.slotOf(uint32(sk.Entropy))
	if !ok {
		return
	}
	ecn := sk.M == wire.SackSkipOnce
	if ecn {
		q.stats.ECNEchoes++
	}
	if q.reps != nil && !sk.PR && sk.M == wire.SackNone {
		q.reps.good(slot)
	}
	if q.mixed != nil && !sk.PR {
		switch sk.M {
		case wire.SackNone:
			q.mixed.good(slot)
		case wire.SackSkipOnce:
			q.mixed.penalize(slot, mixedECN)
		}
	}
	switch {
	case sk.PR:
		q.evs.OnProbeResponse(now, slot, ecn)
	case q.evp.Oblivious:
	case ecn:
		q.evs.OnSkip(now, slot, evset.ReasonECN)
	case sk.M == wire.SackAlwaysSkip:
		q.evs.OnBad(now, slot, evset.ReasonAlwaysSkip)
	}
}

// sampleRTT folds one RTT sample into the smoothed estimate (RFC 6298).
func (s *sender) sampleRTT(rtt time.Duration) {
	if s.srtt == 0 {
		s.srtt, s.rttvar = rtt, rtt/2
		return
	}
	d := s.srtt - rtt
	if d < 0 {
		d = -d
	}
	s.rttvar += (d - s.rttvar) / 4
	s.srtt += (rtt - s.srtt) / 8
}

// complete delivers requester completions for every WRITE whose last PSN is
// now acknowledged, in post order.
func (s *sender) complete(q *QP, now mtime.Time) {
	for s.wqeHead != s.wqeSend || s.wqeHead != s.wqeTail && s.seg > 0 {
		w := s.wqe(s.wqeHead)
		if s.una.Sub(w.first) < int(w.npkts) {
			return
		}
		if w.withImm {
			s.wimm--
		}
		q.stats.WritesDone++
		q.ep.emit(verbs.Event{Kind: verbs.EventWriteDone, Time: now, QPN: q.qpn, WRID: w.id, Bytes: w.length})
		*w = wqe{}
		s.wqeHead++
	}
}

// onNACK processes a reliability NACK (digest §3.5).
func (s *sender) onNACK(q *QP, now mtime.Time, port int, nk *wire.NACK) {
	q.stats.NACKsReceived++
	p := psn.PSN(nk.NackPSN)
	switch nk.Reason {
	case wire.NackUnexpEvent, wire.NackWImmLimit:
		if !s.credibleNACK(q, port, nk) {
			q.ep.drop(now, &q.stats, q.qpn, verbs.DropFatalNACK)
			return
		}
		q.fail(now, verbs.ErrRemoteFatal)
		return
	}
	if _, ok := q.slotOf(uint32(nk.Entropy)); !ok {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropBadEV)
		return
	}
	if !p.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(p).state != pktInFlight {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropStale)
		return
	}
	r := s.rec(p)
	s.requeue(q, p, true)
	q.tracePacket(now, trace.PacketNacked, p, r.slot, r.size, nk.Reason.String())
	cwnd := q.ctl().Window()
	defer q.traceCwnd(now, cwnd)
	switch nk.Reason {
	case wire.NackTrimmed, wire.NackTrimmedLastHop:
		// A mid-fabric trim skips the EV; a last-hop trim does not
		// (the path is fine: incast), unless the packet was also
		// CE-marked on the way (digest §3.5). Either way the trimmed
		// header crossed the plane: it is not dead (planeloss.go).
		s.planeDelivered(q, r.slot, r.sentAt)
		lastHop := nk.Reason == wire.NackTrimmedLastHop
		s.trimAt = now
		if lastHop {
			q.stats.LastHopNACKs++
			s.lastHopTrimAt = now
		} else {
			q.stats.TrimNACKs++
		}
		switch {
		case q.evp.Oblivious:
		case !lastHop:
			q.evs.OnSkip(now, r.slot, evset.ReasonTrim)
		case nk.CE:
			q.evs.OnSkip(now, r.slot, evset.ReasonECN)
		}
		if q.mixed != nil {
			q.mixed.penalize(r.slot, mixedTrim)
		}
		q.ctl().OnNack(now, cc.Nack{Bytes: int(r.size), Inflight: s.inflight, LastHop: lastHop})
	default:
		s.onResourceNACK(q, now, p, nk.Reason)
	}
	q.ep.markReady(q)
}

// onResourceNACK backs off after a NACK saying the responder could not
// take PSN p (NO_BITMAP, NO_PKT_BUFFER, NO_RESOURCE, PSN_OOR_WINDOW;
// docs/spec-gaps.md row 16). The path is not to blame. p
// is already queued for retransmission, but nothing is resent before one
// RTT has passed, doubling with each such NACK until progress resumes;
// the congestion window shrinks as for a loss. PSN_OOR_WINDOW also says
// the peer's window ends before p: every PSN from p on that is still in
// flight is taken out of flight too (the responder answers only a few
// per RTT, and the rest must not time out and blame their EVs), and the
// window shrinks until the peer's next SACK advertises its MPR.
func (s *sender) onResourceNACK(q *QP, now mtime.Time, p psn.PSN, why wire.NackReason) {
	q.ctl().OnLoss(now, int(s.rec(p).size))
	if why == wire.NackPSNOORWindow {
		beyond := p.Sub(s.una)
		for l := s.lossHead; l != noPSN; {
			next := s.rec(l).next
			if l.Sub(s.una) > beyond {
				s.requeue(q, l, false)
			}
			l = next
		}
		s.window = max(wire.MPRUnit, min(s.window, beyond))
	}
	hold := max(q.ep.cfg.BaseRTT, s.srtt) << min(s.backoffs, 6)
	s.backoffs++
	s.rtxHold = max(s.rtxHold, now.Add(hold))
	q.timerDirty = true
}

// nakError returns the error a RoCE NAK with AETH syndrome syn names, or
// nil for a syndrome that is not a NAK MRC acts on (an ACK, a PSN
// sequence error: MRC has no go-back-N).
func nakError(syn uint8) error {
	switch syn {
	case wire.AETHNakRemoteAccess:
		return verbs.ErrRemoteAccess
	case wire.AETHNakInvalidRequest:
		return verbs.ErrRemoteInvalid
	case wire.AETHNakRemoteOperation:
		return verbs.ErrRemoteFatal
	}
	return nil
}

// onAETH processes a RoCE NAK: the responder refused PSN p's memory
// access (docs/spec-gaps.md, "Protection errors"). No path is to blame
// and the congestion window is untouched. Like a fatal NACK, the NAK must
// be credible: it names a PSN sent and not acknowledged and arrived on a
// plane the QP uses from the peer's address (checked in handle). And
// since an on-path forger can make the responder NAK a packet it forged,
// one NAK only queues p for retransmission: the QP fails when a NAK comes
// back for p after that retransmission went out, about one RTT plus the
// responder's NAK interval after the first, well before a loss timer
// could blame an EV. A forged packet whose PSN the real one then fills
// is not NAKed again (the responder NAKs only PSNs it has not received).
func (s *sender) onAETH(q *QP, now mtime.Time, port int, p psn.PSN, syn uint8) {
	if !p.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(p).state == pktAcked || !q.evs.PlaneUp(port) {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropFatalNACK)
		return
	}
	r := s.rec(p)
	switch r.marks & nakMask {
	case nakNone:
		q.stats.ProtNAKsRecv++
		r.marks = r.marks&^nakMask | nakAccused
		if r.state == pktInFlight {
			s.requeue(q, p, false)
		}
		q.ep.markReady(q)
	case nakConfirming:
		q.stats.ProtNAKsRecv++
		q.fail(now, nakError(syn))
	}
}
