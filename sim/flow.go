package sim

// Flows: starting a workload's flows, their completions, and the
// triggers that chain them.

import (
	"fmt"

	"github.com/openmrc/mrc/sim/workload"
)

func (s *shard) startFlow(f int32) {
	w := s.w
	fl := &w.wl.Flows[f]
	fs := &w.flows[f]
	if fs.started {
		return
	}
	src := int32(fl.Src)
	if int(w.hosts[src].shard) != s.id {
		s.err = fmt.Errorf("sim: flow %d triggered in the wrong partition", fl.ID)
		return
	}
	fs.started, fs.start = true, s.now
	nic := w.hosts[src].nic
	remote := w.hosts[fl.Dst].nic.Memory()
	if fl.Conn != 0 {
		// A shared connection's receives are posted as its flows start,
		// so that they are taken in the order the messages are sent; in
		// another partition, at the end of the window, before any of its
		// packets can get there.
		if d := w.hosts[fl.Dst].shard; int(d) != s.id {
			s.out[d] = append(s.out[d], xmsg{at: s.now, dl: f, h: xRecv})
		} else if !s.postRecv(f) {
			return
		}
	}
	for left := fl.Size; left > 0; {
		n := min(left, maxMessage)
		if err := nic.Send(ns(s.now), fs.srcQP, uint64(f), n, remote); err != nil {
			s.err = fmt.Errorf("sim: flow %d: post: %w", fl.ID, err)
			return
		}
		left -= n
	}
	s.afterHost(src)
}

// activate counts an activation of the trigger with ID id.
func (s *shard) activate(id int) {
	if id == 0 {
		return
	}
	s.activateIndex(s.w.trigIndex[id])
}

// activateIndex counts an activation of trigger ti (an index into
// World.trig) now: in its own partition at the end of the window if
// another holds it (jobsplit.go).
func (s *shard) activateIndex(ti int32) {
	if d := s.w.trig[ti].shard; int(d) != s.id {
		s.out[d] = append(s.out[d], xmsg{at: s.now, dl: ti, h: xTrigger})
		return
	}
	s.activateAt(ti, s.now)
}

// activateAt counts an activation of trigger ti that happened at at
// (now, or earlier in another partition); when its condition is met, it
// fires, its delay after the last activation.
func (s *shard) activateAt(ti int32, at Time) {
	w := s.w
	ts := &w.trig[ti]
	ts.lastAct = max(ts.lastAct, at)
	switch ts.kind {
	case workload.AtStart:
		return // fired at the start
	case workload.Oneshot:
		if ts.fired {
			return
		}
		ts.fired = true
	case workload.Barrier:
		ts.count--
		if ts.count > 0 || ts.fired {
			return
		}
		ts.fired = true
	}
	if t := ts.lastAct + ts.delay; t > s.now {
		s.delayed++
		s.push(t, evTrigger, 0, ti)
		return
	}
	s.fire(ti)
}

// postRecv posts the receives of flow f (on a shared connection) at its
// destination, which this partition holds; false if that failed.
func (s *shard) postRecv(f int32) bool {
	w := s.w
	fl := &w.wl.Flows[f]
	for range (fl.Size + maxMessage - 1) / maxMessage {
		if err := w.hosts[fl.Dst].nic.Receive(w.flows[f].dstQP, uint64(f)); err != nil {
			s.err = fmt.Errorf("sim: flow %d: post receive: %w", fl.ID, err)
			return false
		}
	}
	return true
}

// fire fires trigger ti now: it starts its flows and activates the
// triggers it names. A multishot trigger fires at every activation;
// flows that already started ignore it.
func (s *shard) fire(ti int32) {
	w := s.w
	ts := &w.trig[ti]
	if ts.firedAt < 0 {
		ts.firedAt = s.now
	}
	for _, f := range w.trigFlows[ti] {
		s.startFlow(f)
	}
	for _, a := range ts.then {
		s.activateIndex(a)
	}
}

// flowWritten counts one completed WRITE of flow f (err set if it failed):
// the flow's send side is done when the last one completes.
func (s *shard) flowWritten(f int32, err error) {
	fs := &s.w.flows[f]
	if err != nil && !fs.failed {
		fs.failed = true
		s.failed++
	}
	fs.sendLeft--
	if fs.sendLeft == 0 {
		s.sideDone(&fs.sendDone, &s.sendDone, s.w.wl.Flows[f].SendDoneTrigger)
	}
}

// flowReceived counts one WRITE_IMM of flow f received: the flow's receive
// side is done when the last one arrives.
func (s *shard) flowReceived(f int32) {
	fs := &s.w.flows[f]
	fs.recvLeft--
	if fs.recvLeft == 0 {
		s.sideDone(&fs.recvDone, &s.recvDone, s.w.wl.Flows[f].RecvDoneTrigger)
	}
}

// sideDone records that one side of a flow (its sends or its receives)
// finished now: at is the flow's time for that side, count the
// partition's tally of such sides, trigger the trigger it activates.
func (s *shard) sideDone(at *Time, count *int, trigger int) {
	*at = s.now
	*count++
	s.lastDone = max(s.lastDone, s.now)
	s.activate(trigger)
}
