package mrc

import (
	"time"

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
// overflowing, and every SACK of the next interval asks its sender to
// shed the excess fraction of its window: rcv_cwnd_pen = 128 × (L−1)/L,
// at most 127. At L ≤ 1 the penalty is 0 and windows grow again by
// NSCC's own rules. No restore flag is sent: the windows saved before a
// penalty are those that overflowed the responder.
type rcvFlow struct {
	until   mtime.Time // end of the current interval
	offered uint64     // bytes offered in the current interval
	pen     uint8      // the penalty the last full interval earned
}

// noteOffered counts bytes offered to the endpoint at now, closing the
// interval when it is over.
func (e *Endpoint) noteOffered(now mtime.Time, bytes uint64) {
	f := &e.rfc
	if now >= f.until {
		f.pen = 0
		if now < f.until.Add(e.cfg.BaseRTT) { // the interval just ended: judge it
			f.pen = penaltyFor(f.offered, e.capacityBytes(e.cfg.BaseRTT))
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
func (q *QP) rcvPenalty(now mtime.Time) uint8 {
	f := &q.ep.rfc
	own := f.pen
	if now >= f.until.Add(q.ep.cfg.BaseRTT) {
		own = 0 // nothing arrived for a whole interval
	}
	return max(q.rx.penalty, own)
}
