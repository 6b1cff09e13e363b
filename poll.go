package mrc

import (
	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

type pollResult uint8

const (
	pollIdle    pollResult = iota // nothing to send until an input arrives
	pollBlocked                   // something to send, but not on these ports
	pollSent                      // a packet was written
)

// poll writes q's next packet for one of the ports in free into buf and
// describes it in tx when it reports pollSent. Priority: control packets
// (SACK, NACK), then probes of retired EVs, then retransmissions, then new
// data.
func (q *QP) poll(now mtime.Time, free verbs.PortMask, buf []byte, tx *verbs.Transmit) pollResult {
	q.now = now
	if q.state < verbs.StateRTR || q.state == verbs.StateError {
		return pollIdle
	}
	mask := uint32(free)
	if q.rx.ctrlPending() {
		c := q.rx.acks.ctrl.peek()
		if slot, ok := q.ctrlEV(now, c, mask); ok {
			q.writeCtrl(now, c, slot, buf, tx)
			q.rx.acks.ctrl.pop()
			return pollSent
		}
	}
	if i, ok := q.tx.suspectDue(q, now); ok && q.state == verbs.StateRTS {
		if slot, ok := q.tx.suspectProbeEV(q, now, i, mask); ok {
			q.tx.sendSuspectProbe(q, now, i, slot, buf, tx)
			return pollSent
		}
	}
	if slot, ok := q.evs.NextProbe(now, mask); ok {
		if q.probesByEndpoint() {
			q.writeEVProbe(now, slot, buf, tx)
		} else {
			q.writeProbe(now, slot, q.tx.una, buf, tx)
		}
		return pollSent
	}
	if q.state == verbs.StateRTS {
		s := &q.tx
		if s.rtxReady(q, now) {
			if slot, ok := q.pickRetransmitEV(now, mask); ok {
				s.sendRetransmit(q, now, slot, buf, tx)
				return pollSent
			}
		} else if s.newReady(q) {
			if slot, ok := q.pickDataEV(now, mask); ok {
				s.sendNew(q, now, slot, buf, tx)
				return pollSent
			}
		}
	}
	if q.hasWork(now) {
		return pollBlocked
	}
	return pollIdle
}

// hasWork reports whether q has a packet to send on some up port.
func (q *QP) hasWork(now mtime.Time) bool {
	if q.state < verbs.StateRTR || q.state == verbs.StateError {
		return false
	}
	up := uint32(q.ep.up)
	if q.rx.ctrlPending() || q.evs.ProbeDue(now, up) {
		return true
	}
	if _, ok := q.tx.suspectDue(q, now); ok && q.state == verbs.StateRTS && q.evs.Usable(up) {
		return true
	}
	if q.state != verbs.StateRTS || !q.evs.Usable(up) {
		return false
	}
	return q.tx.rtxReady(q, now) || q.tx.newReady(q)
}

// ctrlEV chooses the EV for control packet c: a probe's answer goes back
// on the probe's own path (answerEV), so that the probe asks about that
// path alone; a SACK or NACK of data is sprayed as pickCtrlEV sprays it,
// so that a QP that only receives still meets, and retires, a dead
// reverse path its data never crossed.
func (q *QP) ctrlEV(now mtime.Time, c *ctrlPkt, mask uint32) (evset.Slot, bool) {
	if c.probe {
		slot, ok, _ := q.answerEV(now, c.ev, c.port, mask)
		return slot, ok
	}
	return q.pickCtrlEV(now, c.port, mask)
}

// mirrorEV returns an EV of q in service on the plane and path of ev,
// the EV of a probe q answers: with SRv6 paths the same plane and path
// index lead back through the same T1 and links the probe just crossed
// (a failed link or switch drops both ways). The answer then says
// whether that path works, and nothing about another: sprayed on another
// path it could be lost to a failure the probe never met, and the probe
// would fail for it. ok is false without SRv6 paths, or when q has no
// such EV in service on an up plane.
func (q *QP) mirrorEV(now mtime.Time, ev uint32) (evset.Slot, bool) {
	if q.paths == nil {
		return 0, false
	}
	plane, path := wire.EV(ev).Plane(), wire.EV(ev).Path()
	if plane >= q.evs.Config().Planes || !q.evs.PlaneUp(plane) {
		return 0, false
	}
	lo, hi := q.evs.PlaneSlots(plane)
	for slot := lo; slot < hi; slot++ {
		if wire.EV(q.evs.Value(slot)).Path() == path && q.evs.State(slot, now) == evset.Good {
			return slot, true
		}
	}
	return 0, false
}

// answerEV chooses the EV for the answer to a probe on EV ev that arrived
// on port, among the planes in mask: the probe's own path (mirrorEV), or,
// when q has no EV of it in service, a sprayed one (pickCtrlEV). wait
// says the probe's path is there but its port is busy: the answer waits
// for that port rather than take another path.
func (q *QP) answerEV(now mtime.Time, ev uint32, port int, mask uint32) (slot evset.Slot, ok, wait bool) {
	if slot, ok := q.mirrorEV(now, ev); ok {
		free := mask&(1<<q.evs.Plane(slot)) != 0
		return slot, free, !free
	}
	slot, ok = q.pickCtrlEV(now, port, mask)
	return slot, ok, false
}

// pickCtrlEV chooses the EV for a control packet: the plane the packet it
// answers arrived on when that port is free, else any free plane (the
// reverse-path EV choice of digest §3.4).
func (q *QP) pickCtrlEV(now mtime.Time, plane int, mask uint32) (evset.Slot, bool) {
	if mask&(1<<plane) != 0 {
		if slot, ok := q.evs.Pick(now, 1<<plane, q.ep.rng); ok {
			return slot, true
		}
	}
	return q.evs.Pick(now, mask, q.ep.rng)
}

// writeProbe encodes a reliability probe on EV slot naming PSN p (digest
// §3.7): the answer's ack_psn_offset names p, and its bitmap covers p.
func (q *QP) writeProbe(now mtime.Time, slot evset.Slot, p psn.PSN, buf []byte, tx *verbs.Transmit) {
	e := q.ep
	pk := e.txPacket()
	q.address(pk, slot, e.cfg.DSCP.Data, wire.ECT0)
	q.tx.probeID++
	pk.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpProbe, DestQP: q.remoteQPN, AckReq: true, PSN: uint32(p)}
	pk.Probe = wire.Probe{ProbeID: q.tx.probeID, TS: wire.TSETH{TxTimestamp: timestamp(now), FType: wire.TSETHFType}}
	pk.PayloadLen = 0
	n := len(wire.AppendPacket(buf[:0], pk, nil))
	q.stats.ProbesSent++
	q.timerDirty = true // the probe's deadline
	q.tracePacket(now, trace.ProbeSent, p, slot, 0, "")
	e.describe(tx, q.evs.Plane(slot), n, n, q.qpn, verbs.KindProbe)
}

// address fills the IP and UDP headers of pk for a packet of q on EV slot.
func (q *QP) address(pk *wire.Packet, slot evset.Slot, dscp uint8, ecn wire.ECN) {
	plane := q.evs.Plane(slot)
	ev := q.evs.Value(slot)
	q.ep.address(pk, plane, ev, q.remote[plane], q.paths, dscp, ecn)
}

// address fills the IP and UDP headers of pk for a packet on EV ev of plane
// to dst, encapsulated as the endpoint is configured.
func (e *Endpoint) address(pk *wire.Packet, plane int, ev uint32, dst [16]byte, paths PathFunc, dscp uint8, ecn wire.ECN) {
	sport, flow := wire.SplitEV(wire.EV(ev))
	tc := dscp<<2 | uint8(ecn)
	src := e.ports[plane].addr
	// Field by field: a composite literal assigned through a pointer is
	// built in a temporary and copied in 16-byte pieces, which stall on
	// the temporary's byte-wide stores (store forwarding) on every packet.
	ip := &pk.IP
	ip.TrafficClass, ip.FlowLabel, ip.PayloadLen, ip.NextHeader, ip.HopLimit = tc, flow, 0, wire.ProtoUDP, 64
	ip.Src, ip.Dst = src, dst
	pk.UDP = wire.UDP{SrcPort: sport, DstPort: wire.UDPPortRoCEv2}
	pk.Encap, pk.HasSRH, pk.FinalDst = false, false, [16]byte{}
	switch e.cfg.Encap {
	case EncapUSID:
		pk.IP.Dst = paths(plane, wire.EV(ev))
		pk.FinalDst = dst
	case EncapSRv6:
		pk.Encap = true
		pk.Outer = wire.IPv6{TrafficClass: tc, FlowLabel: flow, NextHeader: wire.ProtoIPv6, HopLimit: 64, Src: src, Dst: paths(plane, wire.EV(ev))}
	}
}
