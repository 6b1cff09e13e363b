package mrc

import (
	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// Path failures shared across an endpoint's QPs (docs/spec-gaps.md row
// 42). With SRv6 paths an EV's plane and path index name the same first
// hops for every QP of a NIC: the plane's port, the T0 uplink and the T1
// it leads to (digest §3.12: the EV's uplink bits go into the T1 uSID
// whatever the destination). A QP that loses a packet on a path and
// retires it has therefore found out something about every QP of the
// endpoint: if the fault sits in those first hops, each of them would
// lose a packet too, and pay a loss timeout, to find the same thing (a
// silent T1 failure: "QPs map out the EVs", digest §3.11). The fault may
// also sit beyond the T1, on the way to that QP's peer only. So the
// others doubt the path rather than retire it: their EVs of it rest while
// one probe asks whether it works for them. An answer puts the EVs back
// in service at once; no answer within the loss timeout retires them as
// a loss would. A doubt costs at most one probe and never a data packet,
// and a QP whose peer the fault does not touch keeps the path. A plane a
// QP retires as a whole (planeloss.go: its T0, or the far host's link
// into it) is news the same way: the others doubt the plane, with one
// probe on a path of it not already known to be dead.
//
// News comes only from retireLost: a loss the QP's own loss timer found
// (a probe's answer may confirm it, never start it). A retirement a
// packet alone prompts (a peer's probe naming a PSN already here,
// recv.go suspectReverse; a SACK's ALWAYS_SKIP) stays the QP's own, so
// that a forged packet cannot move the endpoint's other QPs. News stays
// inside the endpoint, and a QP whose peer sits under its own T0 neither
// gives nor takes it (pathsDiffer).
//
// The endpoint keeps the paths and planes it has news of until one of
// its QPs brings an EV of the path (or plane) back by probes; a QP made
// ready in the meantime doubts them at once, and every QP still holding
// the path retired then probes it without waiting out its backoff.

// pathFault is a path, or with whole a plane, that some QP of the
// endpoint retired for loss and none has seen come back since.
type pathFault struct {
	plane uint8
	whole bool
	path  uint16
}

// sharesPaths reports whether q's EVs name physical paths shared with
// the endpoint's other QPs, so that it sends and heeds path news: it has
// SRv6 paths that its EVs' path indices choose between, and keeps EV
// states.
func (q *QP) sharesPaths() bool {
	return q.routed && !q.evp.Oblivious && !q.ep.cfg.PrivatePathState
}

// hearsNews reports whether q takes path news from the endpoint's other
// QPs: it shares paths and is connected (RTR or RTS).
func (q *QP) hearsNews() bool {
	return q.evs != nil && q.sharesPaths() && q.state >= verbs.StateRTR && q.state != verbs.StateError && !q.destroyed
}

// pathsDiffer reports whether two of q's EVs of one plane with different
// path indices get different SRv6 paths. A peer under the same T0 is
// reached the same way whatever the index: a path fault elsewhere says
// nothing about it, and its probes would bring back paths others need to
// avoid.
func (q *QP) pathsDiffer() bool {
	if q.paths == nil {
		return false
	}
	first := wire.EV(q.evs.Value(0))
	for i := 1; i < q.evs.Len(); i++ {
		ev := wire.EV(q.evs.Value(evset.Slot(i)))
		if ev.Plane() == first.Plane() && ev.Path() != first.Path() {
			return q.paths(first.Plane(), first) != q.paths(ev.Plane(), ev)
		}
	}
	return false
}

// pathOf returns the path EV slot of q names.
func (q *QP) pathOf(slot evset.Slot) pathFault {
	ev := wire.EV(q.evs.Value(slot))
	return pathFault{plane: uint8(ev.Plane()), path: uint16(ev.Path())}
}

// covers reports whether fault f takes in path p.
func (f pathFault) covers(p pathFault) bool {
	return f.plane == p.plane && (f.whole || f.path == p.path)
}

// faultIndex returns the index of f among the endpoint's faults, or -1.
func (e *Endpoint) faultIndex(f pathFault) int {
	for i, g := range e.faults {
		if g == f {
			return i
		}
	}
	return -1
}

// pathLost is told that q retired the EVs of slot's path for loss, or
// with whole every EV of its plane. The first news of a path or plane
// makes every other QP of the endpoint doubt it.
func (e *Endpoint) pathLost(now mtime.Time, q *QP, slot evset.Slot, whole bool) {
	if !q.sharesPaths() {
		return
	}
	f := q.pathOf(slot)
	if whole {
		f = pathFault{plane: f.plane, whole: true}
	}
	if e.faultIndex(f) >= 0 {
		return
	}
	e.faults = append(e.faults, f)
	e.qps.All(func(o *QP) {
		if o != q {
			o.doubt(now, f)
		}
	})
}

// pathBack is told that q brought an EV of slot's path back into service
// by probes. News the endpoint had of the path or of its plane is
// forgotten, and every QP holding an EV of the path retired probes it
// now. Without such news there is nothing to undo: the others hold the
// path as their own losses and probes left it.
func (e *Endpoint) pathBack(now mtime.Time, q *QP, slot evset.Slot) {
	if !q.sharesPaths() {
		return
	}
	f, known := q.pathOf(slot), false
	for _, g := range [2]pathFault{f, {plane: f.plane, whole: true}} {
		if i := e.faultIndex(g); i >= 0 {
			e.faults = append(e.faults[:i], e.faults[i+1:]...)
			known = true
		}
	}
	if !known {
		return
	}
	e.qps.All(func(o *QP) {
		if !o.hearsNews() {
			return
		}
		o.now = max(o.now, now)
		soon := false
		for i := range o.evs.Len() {
			if slot := evset.Slot(i); o.pathOf(slot) == f && o.evs.ProbeSoon(now, slot) {
				soon = true
			}
		}
		if soon {
			o.timerDirty = true
			e.markReady(o)
			e.schedule(o, now)
		}
	})
}

// doubtKnownFaults makes q, just given its paths, doubt every path and
// plane the endpoint has news of.
func (q *QP) doubtKnownFaults(now mtime.Time) {
	for _, f := range q.ep.faults {
		q.doubt(now, f)
	}
}

// doubt doubts q's EVs in service on path or plane f, under one probe
// (evset.Doubt). A plane's probe goes on a path the endpoint has no news
// of, when it can: a dead path must not fail a live plane.
func (q *QP) doubt(now mtime.Time, f pathFault) {
	if !q.hearsNews() {
		return
	}
	q.now = max(q.now, now)
	var buf [16]evset.Slot
	slots := buf[:0]
	for i := range q.evs.Len() {
		slot := evset.Slot(i)
		p := q.pathOf(slot)
		if !f.covers(p) {
			continue
		}
		slots = append(slots, slot)
		if n := len(slots) - 1; f.whole && q.ep.faultIndex(p) < 0 && q.ep.faultIndex(q.pathOf(slots[0])) >= 0 {
			slots[0], slots[n] = slots[n], slots[0] // lead with a path not known dead
		}
	}
	if q.evs.Doubt(now, slots) > 0 {
		q.timerDirty = true
		q.ep.markReady(q)
		q.ep.schedule(q, now)
	}
}

// doubtsFailed retires q's doubted EVs in failed, whose probe went
// unanswered, as a loss would (their plane's loss streak aside: the
// losses were another QP's); one the MinActive floor keeps in service is
// released. A path the endpoint has news of is probed by the QP that
// found it: its EVs here wait for that QP's word (pathBack), and probe
// the path themselves only after the longest probe interval, in case the
// word never comes. The other paths of a plane doubted as a whole are
// probed as the QP's own retirements are: nobody will speak for them.
func (q *QP) doubtsFailed(now mtime.Time, failed []evset.Slot) {
	if len(failed) == 0 {
		return
	}
	for _, slot := range failed {
		q.evs.OnBad(now, slot, evset.ReasonLoss)
		q.evs.Unsuspect(now, slot)
	}
	for _, lead := range q.groupRetired(failed) {
		if q.ep.faultIndex(q.pathOf(lead)) >= 0 {
			q.evs.Defer(now, lead)
		}
	}
}

// groupRetired makes the retired EVs among slots that name one path wait
// on one of them, the path's lead (evset.Follow): one probe per path
// asks for all of them. It returns the leads.
func (q *QP) groupRetired(slots []evset.Slot) []evset.Slot {
	var buf [16]evset.Slot
	leads := buf[:0]
next:
	for _, slot := range slots {
		if q.evs.State(slot, q.now) != evset.AssumedBad {
			continue
		}
		for _, lead := range leads {
			if q.pathOf(lead) == q.pathOf(slot) {
				q.evs.Follow(slot, lead)
				continue next
			}
		}
		leads = append(leads, slot)
	}
	return leads
}
