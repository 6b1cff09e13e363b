package mrc

import (
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// Port status (digest §3.5, §3.11): when a local port goes down the endpoint
// remaps every QP off that plane and tells each peer node with a
// PORT_STATUS_UPDATE endpoint request (ERTH, QPN 2), repeated until the peer
// answers with an endpoint response (EETH) that echoes the tx_timestamp of
// one of the repeats. A peer that learns a remote port is down stops using
// that plane too.

// peer is a node this endpoint has QPs with, identified by its port
// addresses.
type peer struct {
	addrs [][16]byte
	qps   []*QP
	up    verbs.PortMask // the peer's ports that are up, as it last said

	// Our pending announcement to it, and the TSETH tx_timestamp of each
	// try: a response echoing one of them answers it.
	announce bool
	tries    int
	due      mtime.Time
	sentTS   [maxPortUpdates]uint16

	// A response we owe it, and the request timestamp it echoes.
	respond   bool
	respondTS uint16

	requests budget // endpoint requests it may make per interval
}

// Port status requests a peer may make per loss timeout: a real peer
// sends one per change of its ports and repeats it no sooner than one
// loss timeout later. Requests over the rate are dropped unanswered, so
// an honest peer's repeat gets through later.
const portRequestsPerLossTimeout = 4

// maxPortUpdates bounds the retransmissions of one port status update.
const maxPortUpdates = 8

func (e *Endpoint) peerFor(q *QP) *peer {
	for _, p := range e.peers {
		if p.addrs[0] == q.remote[0] {
			p.qps = append(p.qps, q)
			q.remoteUp(p.up)
			return p
		}
	}
	p := &peer{addrs: q.remote, qps: []*QP{q}, up: 1<<len(e.ports) - 1}
	e.peers = append(e.peers, p)
	return p
}

func (e *Endpoint) peerBySource(src [16]byte, port int) *peer {
	for _, p := range e.peers {
		if port < len(p.addrs) && p.addrs[port] == src {
			return p
		}
	}
	return nil
}

// SetPortUp reports that local port went up or down (its link state).
// Every QP stops or resumes spraying on that plane, packets in flight on a
// port that went down are resent elsewhere without blaming their EVs, and
// every peer is told.
func (e *Endpoint) SetPortUp(now mtime.Time, port int, up bool) error {
	if port < 0 || port >= len(e.ports) {
		return verbs.ErrBadPort
	}
	if e.ports[port].up == up {
		return nil
	}
	e.ports[port].up = up
	e.up ^= 1 << port
	e.qps.All(func(q *QP) {
		if q.evs == nil || q.peer == nil {
			return
		}
		q.evs.SetPlaneUp(port, up && q.peer.up&(1<<port) != 0)
		if !up && q.state == verbs.StateRTS {
			q.tx.planeDown(q, port)
		}
		e.markReady(q)
		e.schedule(q, now)
	})
	for _, p := range e.peers {
		p.announce, p.tries, p.due = true, 0, now
	}
	e.epWork = true
	return nil
}

// remoteUp applies the peer's port status to q.
func (q *QP) remoteUp(up verbs.PortMask) {
	for pl := range len(q.ep.ports) {
		q.evs.SetPlaneUp(pl, up&(1<<pl) != 0 && q.ep.up&(1<<pl) != 0)
	}
}

// handleEndpointOp processes an endpoint request or response (QPN 2).
func (e *Endpoint) handleEndpointOp(now mtime.Time, port int, p *wire.Packet) {
	pr := e.peerBySource(p.IP.Src, port)
	if pr == nil {
		e.drop(now, &e.stats, 0, verbs.DropBadSource)
		return
	}
	switch p.BTH.Opcode {
	case wire.OpEndpointRequest:
		if p.EPReq.Op == wire.EPEVProbe {
			e.onEVProbe(now, pr, port, p)
			return
		}
		if !pr.requests.take(now, portRequestsPerLossTimeout, e.cfg.LossTimeout) {
			e.drop(now, &e.stats, 0, verbs.DropPortStatus)
			return
		}
		if p.EPReq.Op == wire.EPPortStatusUpdate {
			// The request came in on port, so the peer's port of
			// that plane is up: a mask saying otherwise (every port
			// down, say) is forged or corrupt.
			up := verbs.PortMask(p.EPReq.PortStatusMask)
			if up&(1<<port) == 0 {
				e.drop(now, &e.stats, 0, verbs.DropPortStatus)
				return
			}
			e.applyPeerPorts(now, pr, up)
		}
		pr.respond, pr.respondTS = true, p.EPReq.TS.TxTimestamp
		e.epWork = true
	case wire.OpEndpointResponse:
		switch p.EPResp.Op {
		case wire.EPEVProbe:
			e.onEVProbeAnswer(now, pr, p)
		case wire.EPPortStatusUpdate:
			if pr.announce && pr.answers(p.EPResp.TxTimestamp) {
				pr.announce = false
			}
		}
	default:
		e.drop(now, &e.stats, 0, verbs.DropNotMRC)
	}
}

// answers reports whether a response echoing tx_timestamp ts answers the
// pending announcement: ts is the timestamp of one of its tries. The
// response's other fields are not looked at: a peer need not fill them.
func (p *peer) answers(ts uint16) bool {
	for _, sent := range p.sentTS[:p.tries] {
		if sent == ts {
			return true
		}
	}
	return false
}

func (e *Endpoint) applyPeerPorts(now mtime.Time, pr *peer, up verbs.PortMask) {
	up &= 1<<len(e.ports) - 1
	if up == pr.up {
		return
	}
	went := pr.up &^ up
	pr.up = up
	for _, q := range pr.qps {
		if q.state == verbs.StateError || q.destroyed {
			continue
		}
		q.remoteUp(up)
		if q.state == verbs.StateRTS {
			for pl := range len(e.ports) {
				if went&(1<<pl) != 0 {
					q.tx.planeDown(q, pl)
				}
			}
		}
		e.emit(verbs.Event{Kind: verbs.EventPeerPorts, Time: now, QPN: q.qpn, PortsUp: up})
		e.markReady(q)
		e.schedule(q, now)
	}
}

// onEndpointTimer works out what endpoint messages are due at now (epWork)
// and when the next falls due (epTimer). Unanswered announcements are
// repeated with backoff, up to maxPortUpdates times.
func (e *Endpoint) onEndpointTimer(now mtime.Time) {
	e.epTimer, e.epWork = mtime.Never, false
	for _, p := range e.peers {
		if p.respond {
			e.epWork = true
		}
		if !p.announce {
			continue
		}
		if p.tries >= maxPortUpdates {
			p.announce = false
			continue
		}
		if p.due <= now {
			e.epWork = true
		} else {
			e.epTimer = mtime.Min(e.epTimer, p.due)
		}
	}
}

// pollEndpoint writes a pending endpoint request or response, if any.
func (e *Endpoint) pollEndpoint(now mtime.Time, free verbs.PortMask, buf []byte, tx *verbs.Transmit) bool {
	if !e.epWork {
		return false
	}
	for _, p := range e.peers {
		// The peer's first QP that can reach it on a free plane lends
		// its EVs and paths.
		var q *QP
		plane := -1
		for _, c := range p.qps {
			if c.evs == nil || c.state == verbs.StateError || c.destroyed {
				continue
			}
			for pl := range len(e.ports) {
				if free&(1<<pl) != 0 && p.up&(1<<pl) != 0 && c.evs.ActiveInPlane(pl) > 0 {
					q, plane = c, pl
					break
				}
			}
			if q != nil {
				break
			}
		}
		if q == nil {
			continue
		}
		slot, ok := q.evs.Pick(now, 1<<plane, e.rng)
		if !ok {
			continue
		}
		pk := e.txPacket()
		q.address(pk, slot, e.cfg.DSCP.Control, wire.NotECT)
		pk.PayloadLen = 0
		switch {
		case p.respond:
			p.respond = false
			pk.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpEndpointResponse, DestQP: wire.QPNEndpoint}
			pk.EPResp = wire.EPResponse{Op: wire.EPPortStatusUpdate, PortStatusMask: uint32(e.up), TxTimestamp: p.respondTS}
		case p.announce && p.due <= now && p.tries < maxPortUpdates:
			ts := timestamp(now)
			p.sentTS[p.tries] = ts
			p.tries++
			p.due = now.Add(e.cfg.LossTimeout << min(p.tries, 10))
			pk.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpEndpointRequest, DestQP: wire.QPNEndpoint}
			pk.EPReq = wire.EPRequest{Op: wire.EPPortStatusUpdate, PortStatusMask: uint32(e.up), TS: wire.TSETH{TxTimestamp: ts, FType: wire.TSETHFType}}
			e.stats.PortUpdateSent++
		default:
			continue
		}
		n := len(wire.AppendPacket(buf[:0], pk, nil))
		e.onEndpointTimer(now)
		e.describe(tx, plane, n, n, 0, verbs.KindEndpoint)
		return true
	}
	e.onEndpointTimer(now)
	return false
}
