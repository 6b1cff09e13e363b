package sim

// Traffic a failed element takes: classification of a packet and the
// per-failure counters.

import (
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/wire"
)

// hit counts packet h (p, with header room hdr) as traffic taken by
// failure record f now: a data packet (also per flow) or a QP's control
// packet (ACK, SACK, NACK, CNP). Probes and endpoint requests are not
// traffic: MRC probes a retired path on purpose.
func (s *shard) hit(f int32, h uint32, p *packet, hdr []byte) {
	switch trafficClass(hdr[:p.n]) {
	case classData:
		s.failHits[f]++
		s.failLast[f] = max(s.failLast[f], s.now)
		if fl, ok := s.w.pktConn(h); ok {
			k := uint64(f)<<32 | uint64(fl)
			if t, ok := s.qpFirst[k]; !ok || s.now < t {
				s.qpFirst[k] = s.now
			}
			s.qpLast[k] = max(s.qpLast[k], s.now)
		}
	case classControl:
		s.failCtl[f]++
		s.failLastCtl[f] = max(s.failLastCtl[f], s.now)
	}
}

// Traffic classes of packets taken by a failed element.
const (
	classOther   = iota // probes, endpoint requests, unknown
	classData           // MRC or RoCE WRITE packets, TCP segments with payload
	classControl        // a QP's ACK, SACK, NACK or CNP; a TCP ACK
)

// trafficClass classifies pkt by its BTH opcode, or a TCP segment by
// whether it carries payload.
func trafficClass(pkt []byte) int {
	if isTCP, data := tcp.Classify(pkt); isTCP {
		if data {
			return classData
		}
		return classControl
	}
	h, ok := wire.Locate(pkt)
	opcode, hasBTH := h.Opcode(pkt)
	if !ok || !hasBTH {
		return classOther
	}
	switch op := byte(opcode); {
	case wire.Opcode(op).IsData() || roce.Opcode(op).IsData():
		return classData
	case op == byte(wire.OpAck) || op == byte(wire.OpSACK) || op == byte(wire.OpNACK),
		op == byte(roce.OpAck) || op == byte(roce.OpCNP):
		return classControl
	}
	return classOther
}

// qpKey names QP qpn of host h, for World.qpFlow.
func qpKey(h int32, qpn uint32) uint64 { return uint64(uint32(h))<<32 | uint64(qpn) }

// pktConn returns the connection (World.qpFlow's flow) of the QP that
// sent packet h, a tagged packet.
func (w *World) pktConn(h uint32) (int32, bool) {
	t := w.tag(h)
	conn, ok := w.qpFlow[qpKey(t.src, t.qpn)]
	return conn, ok
}
