package mrc

import (
	"fmt"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// SmoothedRTT returns the requester's smoothed RTT (tests only).
func (q *QP) SmoothedRTT() time.Duration { return q.tx.srtt }

// ImmSlots returns the size of the responder's table of WRITE_IMMs in
// progress (tests only).
func (q *QP) ImmSlots() int { return len(q.rx.imms) }

// HasCC reports whether the QP has built its congestion controller
// (tests only).
func (q *QP) HasCC() bool { return q.cc != nil }

// WQESlots returns the size of the requester's ring of posted WRITEs
// (tests only).
func (q *QP) WQESlots() int { return len(q.tx.wqes) }

// CheckBlockedPolls asks every ready QP that PollTransmit would pass by
// (its blockedFree in force) for a packet on those ports, and reports
// how many it asked and the first that had one (tests only). A QP asked
// finds nothing when the cache is right, so asking changes nothing but
// its notion of now.
func (e *Endpoint) CheckBlockedPolls(now mtime.Time) (asked int, err error) {
	buf := make([]byte, MaxHeaderLen+e.cfg.MTU+8)
	for range e.ready.Len() {
		q, _ := e.ready.Pop()
		e.ready.Push(q)
		blocked := q.blockedOn(now)
		if blocked == 0 || err != nil {
			continue
		}
		asked++
		var tx verbs.Transmit
		if q.poll(now, blocked, buf, &tx) == pollSent {
			err = fmt.Errorf("QP %d passed by on ports %b at %v, but it sends a %v on port %d", q.qpn, blocked, now, tx.Kind, tx.Port)
		}
	}
	return asked, err
}

// LateTimer reports a QP of e whose timer is armed later than its
// deadline at now (tests only): something moved the deadline earlier
// without marking the timer dirty, so a timeout would run late. A QP
// marked dirty is skipped: it is rescheduled before its next input ends.
func (e *Endpoint) LateTimer(now mtime.Time) error {
	var err error
	e.qps.All(func(q *QP) {
		if err != nil || q.timerDirty {
			return
		}
		d := q.deadline(now)
		if d == mtime.Never {
			return
		}
		d = max(d, now+1) // schedule never arms at or before now
		if !q.timer.Queued() || q.timer.Key() > d {
			err = fmt.Errorf("QP %d at %v: deadline %v, timer armed %v (queued %v)", q.qpn, now, d, q.timer.Key(), q.timer.Queued())
		}
	})
	return err
}
