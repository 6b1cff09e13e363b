package mrc

import (
	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// EV probes (digest §3.4 "Reverse-path EVs", §3.7): connectionless
// endpoint requests (ERTH op EV_PROBE, QPN 2) that test one path without a
// connection's acknowledgement state. A QP that only receives (RTR) has no
// PSNs of its own to report on, so it probes its retired EVs, the paths its
// SACKs travel, with EV probes; a QP that sends (RTS) uses reliability
// probes, whose SACKs also refresh its acknowledgement state. The peer
// endpoint answers with an endpoint response of op EV_PROBE that echoes
// the request's tx_timestamp and reflects the probed EV in the word that
// carries port_status_mask in a PORT_STATUS response (our choice,
// docs/spec-gaps.md row 35). The prober matches the answer by EV and
// timestamp to the request it keeps.

// evProbe is an EV_PROBE request this endpoint sent and awaits.
type evProbe struct {
	qpn   uint32
	ev    uint32
	ts    uint16
	valid bool
}

// evAnswer is an EV_PROBE response this endpoint owes a peer.
type evAnswer struct {
	peer *peer
	port int // where the request arrived: the answer prefers that plane
	ev   uint32
	ts   uint16
}

// evProbes is the endpoint's EV probe state, fixed-size so that probing
// allocates nothing.
type evProbes struct {
	sent    [evProbesKept]evProbe // a ring: the oldest is overwritten
	next    int
	owed    [evAnswersOwed]evAnswer
	nOwed   int
	answers budget // EV probe answers per loss timeout, all peers together
}

const (
	// evProbesKept bounds the requests awaiting an answer; an older one
	// is forgotten (its probe then fails by timeout, evset.ExpireProbes).
	evProbesKept = 32
	// evAnswersOwed bounds the answers waiting to go out.
	evAnswersOwed = 16
	// evAnswersPerLossTimeout bounds the answers sent per loss timeout:
	// an honest prober sends one per retired EV per probe interval.
	evAnswersPerLossTimeout = 32
)

// probesByEndpoint reports whether q probes its retired EVs with EV
// probes rather than reliability probes.
func (q *QP) probesByEndpoint() bool { return q.state == verbs.StateRTR }

// writeEVProbe encodes an EV_PROBE request on EV slot and remembers it.
func (q *QP) writeEVProbe(now mtime.Time, slot evset.Slot, buf []byte, tx *verbs.Transmit) {
	e := q.ep
	pk := e.txPacket()
	q.address(pk, slot, e.cfg.DSCP.Control, wire.NotECT)
	ts := timestamp(now)
	pk.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpEndpointRequest, DestQP: wire.QPNEndpoint}
	pk.EPReq = wire.EPRequest{Op: wire.EPEVProbe, TS: wire.TSETH{TxTimestamp: ts, FType: wire.TSETHFType}}
	pk.PayloadLen = 0
	n := len(wire.AppendPacket(buf[:0], pk, nil))
	p := e.probes()
	p.sent[p.next] = evProbe{qpn: q.qpn, ev: q.evs.Value(slot), ts: ts, valid: true}
	p.next = (p.next + 1) % evProbesKept
	q.stats.ProbesSent++
	q.timerDirty = true // the probe's deadline
	q.tracePacket(now, trace.ProbeSent, 0, slot, 0, "")
	e.describe(tx, q.evs.Plane(slot), n, n, q.qpn, verbs.KindProbe)
}

// onEVProbe queues the answer to an EV_PROBE request from peer pr that
// arrived on port, within the answer budget.
func (e *Endpoint) onEVProbe(now mtime.Time, pr *peer, port int, p *wire.Packet) {
	ep := e.probes()
	if ep.nOwed == evAnswersOwed || !ep.answers.take(now, evAnswersPerLossTimeout, e.cfg.LossTimeout) {
		e.stats.AnswersWithheld++
		return
	}
	ep.owed[ep.nOwed] = evAnswer{peer: pr, port: port, ev: uint32(evOf(p)), ts: p.EPReq.TS.TxTimestamp}
	ep.nOwed++
}

// onEVProbeAnswer applies an EV_PROBE response from peer pr: the probed
// EV answered. A response that matches no request of ours to pr is
// dropped.
func (e *Endpoint) onEVProbeAnswer(now mtime.Time, pr *peer, p *wire.Packet) {
	ev, ts := p.EPResp.PortStatusMask, p.EPResp.TxTimestamp
	var sent []evProbe
	if e.evp != nil {
		sent = e.evp.sent[:]
	}
	for i := range sent {
		s := &sent[i]
		if !s.valid || s.ev != ev || s.ts != ts {
			continue
		}
		q := e.QP(s.qpn)
		if q == nil || q.peer != pr {
			continue
		}
		slot, ok := q.slotOf(ev)
		if !ok {
			continue
		}
		s.valid = false
		q.now = now
		q.evs.OnProbeResponse(now, slot, false)
		e.markReady(q)
		e.schedule(q, now)
		return
	}
	e.drop(now, &e.stats, 0, verbs.DropStale)
}

// pollEVAnswer writes the oldest owed EV_PROBE response, if a QP of its
// peer can lend an EV: of the probed path (answerEV), else on a free
// plane, the request's first. An answer no QP of the peer can carry any
// more is dropped.
func (e *Endpoint) pollEVAnswer(now mtime.Time, free verbs.PortMask, buf []byte, tx *verbs.Transmit) bool {
	ep := e.evp
	if ep == nil || ep.nOwed == 0 {
		return false
	}
	a := &ep.owed[0]
	alive := false
	for _, q := range a.peer.qps {
		if q.evs == nil || q.state == verbs.StateError || q.destroyed {
			continue
		}
		alive = true
		slot, ok, wait := q.answerEV(now, a.ev, a.port, uint32(free&a.peer.up))
		if wait {
			return false
		}
		if !ok {
			continue
		}
		pk := e.txPacket()
		q.address(pk, slot, e.cfg.DSCP.Control, wire.NotECT)
		pk.PayloadLen = 0
		pk.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpEndpointResponse, DestQP: wire.QPNEndpoint}
		pk.EPResp = wire.EPResponse{Op: wire.EPEVProbe, PortStatusMask: a.ev, TxTimestamp: a.ts}
		n := len(wire.AppendPacket(buf[:0], pk, nil))
		ep.popOwed()
		e.describe(tx, q.evs.Plane(slot), n, n, 0, verbs.KindEndpoint)
		return true
	}
	if !alive {
		ep.popOwed()
	}
	return false
}

// probes returns the endpoint's EV probe state, allocating it on first
// use: most endpoints never probe an EV nor answer a probe.
func (e *Endpoint) probes() *evProbes {
	if e.evp == nil {
		e.evp = new(evProbes)
	}
	return e.evp
}

func (ep *evProbes) popOwed() {
	copy(ep.owed[:], ep.owed[1:ep.nOwed])
	ep.nOwed--
}
