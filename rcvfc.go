package mrc

import (
	"math"
	"time"

	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
)

// Responder flow control by the responder itself (digest §3.8, §3.9;
// docs/nscc.md "Responder flow control"). The endpoint measures the load
// offered to it over each interval of one base RTT: the payload bytes of
// every data packet that reached it, trimmed ones counted at the size
// they had before the switch cut them, since their senders offered them.
// A trim at the last hop is the only way the offered load can exceed
// what the ports carried; so when the load L (offered bytes over what the
// up ports carry in the interval) exceeds 1, the responder's backlog is
// overflowing, and the SACKs of the next interval ask their senders to
// shed load. How much each sheds is its excess over an equal share of
// the ports among the senders active at the endpoint (sharePenalty): a
// sender above its share sheds the excess, one at or below it sheds
// nothing and may grow. No restore flag is sent: the windows saved
// before a penalty are those that overflowed the responder.
type rcvFlow struct {
	until   mtime.Time // end of the current interval
	offered uint64     // bytes offered in the current interval
	pen     uint8      // rcv_cwnd_pen of an equal cut: the last full interval's 128 × (L−1)/L
	overAt  mtime.Time // end of the latest interval judged overloaded (0: none)
	senders activeSenders
}

// noteOffered counts bytes offered to the endpoint at now, closing the
// interval when it is over.
func (e *Endpoint) noteOffered(now mtime.Time, bytes uint64) {
	f := &e.rfc
	if now >= f.until {
		f.pen = 0
		if now < f.until.Add(e.cfg.BaseRTT) { // the interval just ended: judge it
			f.pen = penaltyFor(f.offered, e.capacityBytes(e.cfg.BaseRTT))
			if f.pen > 0 {
				f.overAt = f.until
			}
		}
		f.offered, f.until = 0, now.Add(e.cfg.BaseRTT)
	}
	f.offered += bytes
}

// capacityBytes is what the endpoint's up ports carry in d.
func (e *Endpoint) capacityBytes(d time.Duration) uint64 {
	up := uint64(0)
	for i := range e.ports {
		if e.ports[i].up {
			up++
		}
	}
	return up * uint64(e.cfg.LinkBitsPerSec) / 8 * uint64(d) / uint64(time.Second)
}

// penaltyFor returns rcv_cwnd_pen for offered bytes against capacity.
func penaltyFor(offered, capacity uint64) uint8 {
	if capacity == 0 || offered <= capacity {
		return 0
	}
	return uint8(min(127, 128*(offered-capacity)/offered))
}

// rcvPenalty returns the penalty a SACK sent at now advertises: the
// host's (SetReceivePenalty) or the endpoint's own, whichever is larger.
// The endpoint's own is q's excess over its share while the last interval
// overloaded the ports. A probe's answer also says whether the ports were
// overloaded lately: at least 1 if an interval ending within two of the
// longest round trips was, so that a requester whose packet went missing
// there does not grow its window on the answer (NSCC grows no window a
// penalty limits).
func (q *QP) rcvPenalty(now mtime.Time, probe bool) uint8 {
	e := q.ep
	f := &e.rfc
	own := f.pen
	if now >= f.until.Add(e.cfg.BaseRTT) {
		own = 0 // nothing arrived for a whole interval
	}
	if own > 0 {
		share := q.sharePenalty(now)
		if probe {
			own = max(own, share)
		} else {
			own = share
		}
	}
	if probe && f.overAt > 0 && now.Sub(f.overAt) <= 2*e.cfg.longestRTT() {
		own = max(own, 1)
	}
	return max(q.rx.penalty, own)
}

// sharePenalty is q's excess over an equal share of the ports among the
// active senders, as rcv_cwnd_pen: 128 × (rate − share)/rate rounded, at
// least 1 above the share (no increase), 0 at or below it.
func (q *QP) sharePenalty(now mtime.Time) uint8 {
	e := q.ep
	n := e.rfc.senders.n
	if n <= 0 || q.rx.acks == nil {
		return 0
	}
	rate := q.rx.acks.load.rate(now, rateSpan*e.cfg.BaseRTT)
	share := float64(e.capacityBytes(time.Second)) / float64(time.Second) / float64(n)
	if rate <= share {
		return 0
	}
	return uint8(min(127, max(1, math.Round(128*(rate-share)/rate))))
}

// Active senders. A QP counts from its latest arrival for activeEpochs
// epochs of activeEpochLen base RTTs each (256 base RTTs: a paced sender
// at its floor, one packet per 16 RTTs of up to several base RTTs each,
// stays counted), or until every message it sent has arrived whole.
const (
	activeEpochs   = 32
	activeEpochLen = 8
)

// activeSenders counts the QPs that sent to the endpoint lately, each in
// the epoch of its latest arrival.
type activeSenders struct {
	counts [activeEpochs]int32
	epoch  int64 // the current epoch
	n      int32 // the sum of counts
}

// roll advances the epochs to the one holding now; epochs that fall out
// take their senders with them. Most calls fall in the current epoch,
// which costs a comparison, not the division that finds the epoch.
func (a *activeSenders) roll(now mtime.Time, base time.Duration) {
	span := int64(base) * activeEpochLen
	if int64(now) < (a.epoch+1)*span {
		return
	}
	cur := int64(now) / span
	if cur-a.epoch >= activeEpochs {
		*a = activeSenders{epoch: cur}
		return
	}
	for a.epoch < cur {
		a.epoch++
		i := a.epoch % activeEpochs
		a.n -= a.counts[i]
		a.counts[i] = 0
	}
}

// remove takes l out of the count.
func (a *activeSenders) remove(l *senderLoad) {
	if l.epoch > 0 && a.epoch-(l.epoch-1) < activeEpochs {
		a.counts[(l.epoch-1)%activeEpochs]--
		a.n--
	}
	l.epoch = 0
}

// rateSamples points of a sender's arrivals are kept, at least
// span/rateSamples apart (span = rateSpan base RTTs); the rate reaches
// back at least span over them, so that a window's packets, which the
// last hop spreads over a round trip, count together, and a sender at
// line rate is measured over the span, not over its last few packets.
const (
	rateSamples = 16
	rateSpan    = 2
)

// senderLoad is what the responder measures of its peer's sending.
type senderLoad struct {
	epoch int64   // epoch of the latest arrival + 1 (0: not counted)
	end   psn.PSN // last PSN of the latest message end that arrived
	ended bool    // end is set and its message is not yet whole
	at    [rateSamples]mtime.Time
	cum   [rateSamples]uint64 // bytes offered up to and including the arrival at at
	total uint64              // bytes offered so far
	n     uint32              // points kept so far
}

// rate is the peer's offered rate at now, bytes per ns: the bytes that
// arrived after the latest point at least span before now (or the oldest
// kept), over the time since it.
func (l *senderLoad) rate(now mtime.Time, span time.Duration) float64 {
	kept := min(l.n, rateSamples)
	for i := uint32(1); i <= kept; i++ {
		j := (l.n - i) % rateSamples
		if d := now.Sub(l.at[j]); d >= span || i == kept {
			return float64(l.total-l.cum[j]) / float64(max(d, 1))
		}
	}
	return 0
}

// noteSender records bytes offered by q's peer at now: they count in
// the endpoint's load (noteOffered), the peer counts as an active sender,
// and the arrival joins its rate.
func (q *QP) noteSender(now mtime.Time, bytes uint64) {
	q.ep.noteOffered(now, bytes)
	a, l := &q.ep.rfc.senders, &q.rx.ack().load
	a.roll(now, q.ep.cfg.BaseRTT)
	a.remove(l)
	a.counts[a.epoch%activeEpochs]++
	a.n++
	l.epoch = a.epoch + 1
	l.total += bytes
	gap := rateSpan * q.ep.cfg.BaseRTT / rateSamples
	if last := (l.n - 1) % rateSamples; l.n == 0 || now.Sub(l.at[last]) >= gap {
		l.at[l.n%rateSamples], l.cum[l.n%rateSamples] = now, l.total
		l.n++
	}
}

// noteWhole takes q's peer out of the active senders once every message
// it sent so far has arrived: PSN n just arrived, the last of a message
// when end.
func (q *QP) noteWhole(n psn.PSN, end bool) {
	r := &q.rx
	l := &r.ack().load
	if end {
		l.end, l.ended = n, true
	}
	if l.ended && l.end.Less(r.win.Next()) && r.win.Ahead() == 0 {
		l.ended = false
		q.ep.rfc.senders.remove(l)
	}
}
