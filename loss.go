package mrc

import (
	"time"

	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// suspect is an EV whose packet psn timed out (digest §3.7: probes
// "refresh ack state when SACKs may have been lost"). Rather than retire
// it at once, the requester rests it and holds its timed-out packets while
// reliability probes on other EVs name psn; the answer says whether psn
// arrived (docs/spec-gaps.md row 36). One probe is outstanding per suspect
// at a time, and one probe's answer may settle several (answerAwaited).
type suspect struct {
	slot     evset.Slot
	psn      psn.PSN
	tries    int
	awaiting bool       // a probe is out
	at       mtime.Time // the answer's deadline when awaiting, else when the next probe is due
	used     bool
	// probePlane is the plane the latest probe went out on; silent has a
	// bit for each plane where one went unanswered.
	probePlane int
	silent     uint32
	// self says the packet is known lost and resent, and the probes now
	// travel the suspect EV itself, to tell congestion from a dead path
	// (sender.confirm).
	self bool
}

const (
	// suspectTries is how many probes in a row may go unanswered before
	// the suspect is retired anyway. A probe travels another EV, so a dead
	// suspect is known from the first answer; only lost answers repeat
	// it: with 30% of SACKs lost, twelve in a row happen 5e-7 of the
	// time.
	suspectTries = 12
	// selfProbeTries is how many probes of a suspect EV itself go
	// unanswered before it is retired (sender.confirm): a dead path loses
	// them all, a live one with 30% of its answers lost keeps its EV
	// 97% of the time.
	selfProbeTries = 3
)

// deadline returns the requester's next deadline: the loss timer of the
// oldest packet in flight, or the retry backstop while work is pending.
func (s *sender) deadline(q *QP) mtime.Time {
	t := mtime.Never
	if s.lossHead != noPSN {
		sent := s.rec(s.lossHead).sentAt
		t = sent.Add(s.lossTimeoutOf(q, sent))
	}
	if s.wqeHead != s.wqeTail {
		t = mtime.Min(t, s.lastProgress.Add(s.retryInterval()))
	}
	if s.rtxHold > q.now && s.rtxq.Len() > 0 {
		t = mtime.Min(t, s.rtxHold)
	}
	if s.paceAt > q.now && s.inflight == 0 && (s.rtxq.Len() > 0 || s.wqeSend != s.wqeTail) {
		t = mtime.Min(t, s.paceAt)
	}
	for i := range s.suspects {
		if sp := &s.suspects[i]; sp.used && sp.awaiting {
			t = mtime.Min(t, sp.at)
		}
	}
	return t
}

// lossTimeoutOf returns the loss timer of a packet sent at sent: the
// QP's (lossTimeout), stretched to the base RTT plus the fabric's
// queueing bound when a trim NACK arrived after the packet left. Trims
// say the queues on the way were full to their thresholds, so the packet
// may still be waiting in one; before that bound has passed its silence
// says nothing of its path (docs/spec-gaps.md row 39). Packets are timed
// out oldest first, so a younger packet on the short timer waits for an
// older one on the long.
func (s *sender) lossTimeoutOf(q *QP, sent mtime.Time) time.Duration {
	to := q.lossTimeout()
	if since(s.trimAt, sent) {
		to = max(to, q.ep.cfg.BaseRTT+q.ep.cfg.QueueingBound)
	}
	return to
}

// congestionLoss reports whether a packet sent at sent whose loss timer
// expired was most likely lost to full queues rather than to its path,
// when
//   - a TRIMMED_LASTHOP NACK arrived after it left: the peer's last hop,
//     which every path to it shares, was trimming the QP's packets while
//     this one travelled, so its trimmed header was most likely dropped in
//     that hop's full header queue, as an incast's trims compound there
//     (docs/spec-gaps.md row 38); or
//   - a trim NACK of either kind arrived after it left, and nothing sent
//     after it has been acknowledged since. A path that failed loses its
//     own packets while those sent after them on other paths are
//     acknowledged; a flight whose every packet met full queues leaves no
//     such sign, and the probe that would judge its path would travel the
//     same queues (row 46).
func (s *sender) congestionLoss(sent mtime.Time) bool {
	return since(s.lastHopTrimAt, sent) || since(s.trimAt, sent) && s.ackedSentAt <= sent
}

// since reports whether a NACK that arrived at (0: none yet; none arrives
// at time 0) came after a packet sent at sent left, or as it left.
func since(at, sent mtime.Time) bool {
	return at > 0 && at >= sent
}

// retryInterval is the backstop timeout for the current retry: fixed for
// the linear retries, then doubling.
func (s *sender) retryInterval() time.Duration {
	if s.retries < s.retryLinear {
		return s.timeout
	}
	return s.timeout << min(s.retries-s.retryLinear+1, 16)
}

// onTimer declares lost every packet whose loss timer expired, retiring its
// EV (digest §3.5: an untrimmed loss means the path failed), and runs the
// retry backstop. A congestion loss (congestionLoss) is the exception: it
// is resent at once, blaming no EV.
func (s *sender) onTimer(q *QP, now mtime.Time) {
	for s.lossHead != noPSN {
		p := s.lossHead
		r := s.rec(p)
		if r.sentAt.Add(s.lossTimeoutOf(q, r.sentAt)) > now {
			break
		}
		q.stats.LossTimeouts++
		if q.reps != nil {
			q.reps.lost(now)
		}
		if q.mixed != nil {
			q.mixed.penalize(r.slot, mixedMax)
		}
		congestion := s.congestionLoss(r.sentAt)
		if !congestion && s.holdSuspect(q, now, p) {
			continue
		}
		s.requeue(q, p, false)
		q.tracePacket(now, trace.PacketLost, p, r.slot, r.size, "")
		cwnd := q.ctl().Window()
		// A packet that went into a path retired since carries no news:
		// the retirement already took the window's one cut for it.
		known := !q.evp.Oblivious && q.evs.State(r.slot, now) == evset.AssumedBad
		if !congestion && !q.evp.Oblivious && q.evs.PlaneUp(q.evs.Plane(r.slot)) {
			q.retireLost(now, r.slot, r.sentAt)
			s.releaseRetired(q, now)
		}
		if known {
			q.ctl().OnGone(now, int(r.size))
		} else {
			q.ctl().OnLoss(now, int(r.size))
		}
		q.traceCwnd(now, cwnd)
	}
	s.expireSuspects(q, now)
	if s.wqeHead != s.wqeTail && now >= s.lastProgress.Add(s.retryInterval()) {
		s.retries++
		q.stats.RetryTimeouts++
		if s.retryExp != RetryForever && s.retries > s.retryLinear+s.retryExp {
			q.fail(now, verbs.ErrNoPath)
			return
		}
		s.lastProgress = now
	}
}

// planeDown takes every packet in flight on plane out of flight for
// retransmission elsewhere, without blaming its EV: the port is down. A
// suspect of the plane ends unblamed; one whose probe went out on the
// plane asks again at once on another, the try uncounted: the probe or
// its answer, which takes the probe's path back, is lost with the port.
func (s *sender) planeDown(q *QP, plane int) {
	for i := range s.suspects {
		sp := &s.suspects[i]
		switch {
		case !sp.used:
		case q.evs.Plane(sp.slot) == plane:
			s.release(q, q.now, i, false, false)
		case sp.awaiting && sp.probePlane == plane:
			sp.awaiting, sp.at = false, q.now
			sp.tries--
		}
	}
	for p := s.lossHead; p != noPSN; {
		r := s.rec(p)
		next := r.next
		if q.evs.Plane(r.slot) == plane {
			s.requeue(q, p, false)
		}
		p = next
	}
}

// holdSuspect holds p, whose loss timer expired, if its EV is or can
// become a suspect, and reports whether it did. Oblivious spraying, a
// plane that is down and an EV already out of service take the old way:
// resend and retire.
func (s *sender) holdSuspect(q *QP, now mtime.Time, p psn.PSN) bool {
	r := s.rec(p)
	if q.evp.Oblivious || !q.evs.PlaneUp(q.evs.Plane(r.slot)) {
		return false
	}
	i := s.suspectOf(r.slot)
	if i < 0 {
		if !q.evs.Suspect(now, r.slot) {
			return false
		}
		q.samePath(r.slot, func(o evset.Slot) { q.evs.Suspect(now, o) })
		i = s.freeSuspect()
		s.suspects[i] = suspect{slot: r.slot, psn: p, at: now, used: true}
		q.ep.markReady(q)
	}
	s.unlinkLoss(q, p)
	s.land(q, r.size)
	r.state = pktHeld
	r.mayEcho()
	return true
}

func (s *sender) suspectOf(slot evset.Slot) int {
	for i := range s.suspects {
		if sp := &s.suspects[i]; sp.used && sp.slot == slot {
			return i
		}
	}
	return -1
}

// freeSuspect returns an unused entry of the suspect table, growing it
// when there is none (a QP has fewer suspects than EVs).
func (s *sender) freeSuspect() int {
	for i := range s.suspects {
		if !s.suspects[i].used {
			return i
		}
	}
	s.suspects = append(s.suspects, suspect{})
	return len(s.suspects) - 1
}

// suspectDue returns a suspect whose next probe is due at now. A suspect
// waits while another's probe is out whose answer will likely settle it
// too (answerAwaited).
func (s *sender) suspectDue(q *QP, now mtime.Time) (int, bool) {
	for i := range s.suspects {
		if sp := &s.suspects[i]; sp.used && !sp.awaiting && sp.at <= now && !s.answerAwaited(q, sp) {
			return i, true
		}
	}
	return 0, false
}

// answerAwaited reports whether suspect sp waits for the answer to
// another suspect's probe rather than send its own: that probe is out,
// names a PSN less than a bitmap's width from sp's, so that its answer
// will likely settle sp too (resolveSuspects), and took a plane sp's own
// probe might take (avoided). A probe that confirms its own EV (self)
// asks about a path, where sp asks about a packet; a suspect being
// confirmed waits for nobody.
func (s *sender) answerAwaited(q *QP, sp *suspect) bool {
	if sp.self {
		return false
	}
	avoid := s.avoided(q, sp)
	for i := range s.suspects {
		o := &s.suspects[i]
		if o.used && o.awaiting && !o.self && o != sp && avoid&(1<<o.probePlane) == 0 &&
			sp.psn.InWindow(o.psn.Add(-(wire.SACKBitmapBits-1)), 2*wire.SACKBitmapBits-1) {
			return true
		}
	}
	return false
}

// sendSuspectProbe writes suspect i's probe on EV slot, another EV than
// the suspect's when one is usable: it names the held PSN.
func (s *sender) sendSuspectProbe(q *QP, now mtime.Time, i int, slot evset.Slot, buf []byte, tx *verbs.Transmit) {
	sp := &s.suspects[i]
	sp.awaiting, sp.at = true, now.Add(q.lossTimeout())
	sp.tries++
	sp.probePlane = q.evs.Plane(slot)
	q.writeProbe(now, slot, sp.psn, buf, tx)
}

// suspectProbeEV chooses the EV for suspect i's probe among the planes in
// mask: the suspect EV itself when it is being confirmed (self), else a
// usable EV of a plane other than the suspect's and those where its
// probes went unanswered, while there is one (docs/spec-gaps.md row 45).
// The suspect's own plane is the likeliest to share its silent loss (the
// T0 at either end serves every path of the plane to this peer), a plane
// that left a probe unanswered may be dead to this peer too, and each
// unanswered probe costs a loss timeout.
func (s *sender) suspectProbeEV(q *QP, now mtime.Time, i int, mask uint32) (evset.Slot, bool) {
	sp := &s.suspects[i]
	own := uint32(1) << q.evs.Plane(sp.slot)
	if sp.self {
		return sp.slot, mask&own != 0
	}
	if !q.evs.Usable(^(own | sp.silent)) {
		sp.silent = 0 // every other plane left one unanswered: go round again
	}
	return q.evs.Pick(now, mask&^s.avoided(q, sp), q.ep.rng)
}

// avoided returns the planes suspect sp's next probe avoids: its own and
// those where its probes went unanswered, while another has a usable EV.
func (s *sender) avoided(q *QP, sp *suspect) uint32 {
	own := uint32(1) << q.evs.Plane(sp.slot)
	switch {
	case q.evs.Usable(^(own | sp.silent)):
		return own | sp.silent
	case q.evs.Usable(^own):
		return own
	}
	return 0
}

// resolveSuspects applies a SACK to the suspects: one whose held PSN it
// acknowledges was healthy (only its SACK was lost); one whose PSN a
// probe's answer names, or its bitmap covers, and does not acknowledge
// lost the packet, on its path unless the answer carries a receive
// penalty: the responder's last hop was overloaded lately (rcvPenalty),
// and it is on every path to the peer, so a header it dropped says
// nothing of the path (as a TRIMMED_LASTHOP NACK that came after the
// packet left says nothing; docs/spec-gaps.md rows 38 and 43). A
// suspect's loss timer has expired, so any answer arriving now reports
// the responder's state at least as late as the timer assumed the SACK
// would: one probe's answer settles every suspect in its bitmap (row
// 36). A suspect being confirmed (self) is healthy once any probe answer
// comes back over its EV.
func (s *sender) resolveSuspects(q *QP, now mtime.Time, sk *wire.SACK) {
	trig := psn.PSN(sk.CackPSN).Add(int(sk.AckPSNOffset))
	base := psn.PSN(sk.CackPSN).Add(int(sk.SackOffset))
	for i := range s.suspects {
		sp := &s.suspects[i]
		if !sp.used {
			continue
		}
		switch {
		case sp.self:
			if sk.PR && uint32(sk.Entropy) == q.evs.Value(sp.slot) {
				s.release(q, now, i, false, false)
			}
		case !sp.psn.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(sp.psn).state == pktAcked:
			s.release(q, now, i, false, false)
		case sk.PR && (trig == sp.psn || sp.psn.InWindow(base, wire.SACKBitmapBits)):
			s.release(q, now, i, true, sk.CC.RcvCwndPen == 0)
		}
	}
}

// expireSuspects fails every suspect probe whose answer is overdue: the
// next goes out at once, up to suspectTries, then the EV is retired.
func (s *sender) expireSuspects(q *QP, now mtime.Time) {
	for i := range s.suspects {
		sp := &s.suspects[i]
		if !sp.used || !sp.awaiting || sp.at > now {
			continue
		}
		sp.awaiting = false
		sp.silent |= 1 << sp.probePlane
		if sp.tries >= suspectTries || sp.self && sp.tries >= selfProbeTries {
			s.release(q, now, i, true, true)
			continue
		}
		q.ep.markReady(q)
	}
}

// releaseRetired ends every suspect whose EV a retirement has taken out
// of service: its held packets went into a path now known dead, and are
// resent at once, as a timer expiring on such a path resends them
// (onTimer). Without it they would wait for their own probe's answer,
// which can only say what the retirement said.
func (s *sender) releaseRetired(q *QP, now mtime.Time) {
	for i := range s.suspects {
		if sp := &s.suspects[i]; sp.used && q.evs.State(sp.slot, now) == evset.AssumedBad {
			s.release(q, now, i, true, false)
		}
	}
}

// release ends suspect i. A lost packet (lost) shrinks the window once
// for all its held packets, and, blamed on its path (path), retires the
// EV as an untrimmed loss does (digest §3.5); otherwise the EV is Good
// again. Either way its held packets not acknowledged are queued for
// retransmission.
func (s *sender) release(q *QP, now mtime.Time, i int, lost, path bool) {
	sp := s.suspects[i]
	confirm := lost && path && s.confirm && !sp.self
	if confirm {
		// Resend now, but keep the EV resting while it is probed itself.
		s.suspects[i] = suspect{slot: sp.slot, psn: sp.psn, at: now, used: true, self: true}
	} else {
		s.suspects[i] = suspect{}
		q.evs.Unsuspect(now, sp.slot)
		q.samePath(sp.slot, func(o evset.Slot) {
			if s.suspectOf(o) < 0 {
				q.evs.Unsuspect(now, o)
			}
		})
	}
	// The first held packet cuts the window, the others went the same way;
	// none does when the EV was retired while they were held (a path known
	// dead since: the retirement took the cut).
	news := lost && q.evs.State(sp.slot, now) != evset.AssumedBad
	retire := lost && path && !confirm
	if retire {
		q.retireLost(now, sp.slot, s.rec(sp.psn).sentAt)
	}
	cwnd := q.ctl().Window()
	for p := s.una; p != s.nxt; p = p.Add(1) {
		r := s.rec(p)
		if r.state != pktHeld || r.slot != sp.slot {
			continue
		}
		r.state = pktLost
		s.rtxq.Push(p)
		q.tracePacket(now, trace.PacketLost, p, r.slot, r.size, "")
		switch {
		case news:
			q.ctl().OnLoss(now, int(r.size))
			news = false
		case lost:
			q.ctl().OnGone(now, int(r.size))
		}
	}
	q.traceCwnd(now, cwnd)
	if retire {
		s.releaseRetired(q, now)
	}
	q.ep.markReady(q)
}
