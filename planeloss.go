package mrc

import (
	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/mtime"
)

// planeLossPaths is how many distinct paths of one plane must lose a
// packet, with no packet sent on that plane since the first of those
// losses acknowledged, before the requester takes the plane to have
// failed for this QP as a whole (a T0 switch that blackholes, or the
// far host's link into it down): one path lost is a path; three, while
// the plane's other paths deliver nothing, is the plane.
const planeLossPaths = 3

// planeStreak counts the paths of one plane retired for loss since the
// plane last delivered a packet sent at or after since.
type planeStreak struct {
	paths uint8
	since mtime.Time // send time of the first lost packet of the streak
}

// retireLost retires the path of slot after the untrimmed loss of a
// packet sent at sentAt, and every EV of its plane when that makes
// planeLossPaths paths of the plane lost in a row and the QP has another
// plane to move to. Retiring EV by EV, a dead plane costs a QP one loss
// timeout for every path it still holds in service or in backup there;
// retired together, the probes bring them back when the plane recovers.
func (q *QP) retireLost(now mtime.Time, slot evset.Slot, sentAt mtime.Time) {
	if !q.retirePath(now, slot) || q.evs.Config().Planes < 2 {
		return // with one plane there is no other to move to
	}
	s := &q.tx
	if s.planeLoss == nil {
		s.planeLoss = make([]planeStreak, q.evs.Config().Planes)
	}
	p := q.evs.Plane(slot)
	st := &s.planeLoss[p]
	if st.paths == 0 {
		st.since = sentAt
	}
	st.since = mtime.Min(st.since, sentAt)
	if st.paths++; st.paths < planeLossPaths {
		return
	}
	*st = planeStreak{}
	for i := range q.evs.Len() {
		if other := evset.Slot(i); q.evs.Plane(other) == p {
			q.evs.OnBad(now, other, evset.ReasonLoss)
		}
	}
}

// planeDelivered ends the loss streak of slot's plane when a packet
// sent on it at or after the streak began is acknowledged, or NACKed as
// trimmed: its header crossed the plane.
func (s *sender) planeDelivered(q *QP, slot evset.Slot, sentAt mtime.Time) {
	if s.planeLoss == nil {
		return
	}
	if st := &s.planeLoss[q.evs.Plane(slot)]; st.paths > 0 && !sentAt.Before(st.since) {
		*st = planeStreak{}
	}
}
