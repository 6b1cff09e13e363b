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
// plane last delivered a packet sent after the first of those losses.
type planeStreak struct {
	paths uint8
	since mtime.Time // send time of the first lost packet of the streak
	// delivered is the latest send time of a packet on the plane that
	// was acknowledged or NACKed as trimmed. A port sends one packet at a
	// time, so no other packet of the plane was sent at the same time as
	// a lost one.
	delivered mtime.Time
}

// retireLost retires the path of slot after the untrimmed loss of a
// packet sent at sentAt, and every EV of its plane when that makes
// planeLossPaths paths of the plane lost with nothing sent on the plane
// since the first of those losses delivered, and the QP has another plane
// to move to. Retiring EV by EV, a dead plane costs a QP one loss timeout
// for every path it still holds in service or in backup there; retired
// together, the probes bring them back when the plane recovers. A loss
// of a packet sent before the plane's latest delivery does not count: the
// plane was alive after it left, and the loss was its path's (several
// dead T1s of one plane lose packets in one burst), or the packet waited
// in a queue the plane's failure emptied.
//
// The endpoint's other QPs hear of the path or plane (pathshare.go): a
// retirement here begins with the QP's own loss timer, which a packet
// from the network cannot set off (a probe's answer may only confirm it).
func (q *QP) retireLost(now mtime.Time, slot evset.Slot, sentAt mtime.Time) {
	if !q.retirePath(now, slot) {
		return
	}
	q.ep.pathLost(now, q, slot, false)
	if q.evs.Config().Planes < 2 {
		return // with one plane there is no other to move to
	}
	st := q.tx.streak(q, q.evs.Plane(slot))
	switch {
	case st.delivered > sentAt:
		return // the plane delivered a packet sent after this one
	case st.paths == 0 || st.delivered > st.since:
		st.paths, st.since = 0, sentAt
	}
	st.since = mtime.Min(st.since, sentAt)
	if st.paths++; st.paths < planeLossPaths {
		return
	}
	st.paths = 0
	p := q.evs.Plane(slot)
	var plane []evset.Slot
	for i := range q.evs.Len() {
		if other := evset.Slot(i); q.evs.Plane(other) == p {
			q.evs.OnBad(now, other, evset.ReasonLoss)
			plane = append(plane, other)
		}
	}
	q.groupRetired(plane)
	q.ep.pathLost(now, q, slot, true)
}

// streak returns plane p's loss streak, allocating the table on first
// use.
func (s *sender) streak(q *QP, p int) *planeStreak {
	if s.planeLoss == nil {
		s.planeLoss = make([]planeStreak, q.evs.Config().Planes)
	}
	return &s.planeLoss[p]
}

// planeDelivered records that a packet sent on slot's plane at sentAt
// was acknowledged, or NACKed as trimmed: it crossed the plane.
func (s *sender) planeDelivered(q *QP, slot evset.Slot, sentAt mtime.Time) {
	if st := s.streak(q, q.evs.Plane(slot)); sentAt > st.delivered {
		st.delivered = sentAt
	}
}
