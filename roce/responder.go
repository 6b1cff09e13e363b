package roce

import (
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// The responder: in-order acceptance of the peer's WRITEs (only the
// expected PSN is accepted), placement at the RETH of the message's first
// packet, one sequence-error NAK per gap, RNR NAKs for WRITE_IMMs that
// find no receive, coalesced ACKs (IBTA Vol. 1 §9.7.5), and the DCQCN
// notification point.

type responder struct {
	epsn psn.PSN // the expected PSN
	msn  uint32  // messages completed (24 bits), reported in the AETH

	// The message in progress (after a FIRST, before its LAST).
	inMsg  bool
	rkey   uint32
	va     uint64 // where its next byte goes
	left   uint64 // its bytes not yet received
	dmaLen uint32

	sinceAck   int  // packets accepted since the last ACK
	ackPending bool // an ACK of epsn-1 is due
	nakPending bool // a NAK of epsn is due
	nakSyn     uint8
	nakPSN     psn.PSN
	// nakSent: a NAK for epsn has gone out (or is due). Until epsn
	// arrives, later packets are dropped without another NAK: one NAK per
	// gap.
	nakSent bool

	cnpPending  bool
	cnpSent     bool // a CNP has been sent, at cnpAt
	cnpAt       mtime.Time
	becnPending bool  // CCBECN: the next ACK carries BECN
	rnrCode     uint8 // the RNR timer code this responder advertises

	recvs    []uint64 // posted receives, oldest first
	recvHead int

	// Out-of-order reception (ConnectAttr.ReorderWindow): packets
	// accepted ahead of epsn wait in ahead, a ring indexed by PSN that
	// grows by doubling up to the window.
	window int
	ahead  []held
}

// held is a data packet accepted ahead of the expected PSN, kept until
// the gap before it fills.
type held struct {
	psn     psn.PSN
	has     bool
	phantom bool
	ackReq  bool
	op      Opcode
	size    int // payload length
	reth    wire.RETH
	imm     wire.ImmDt
	payload []byte // a copy of the payload, for real memory
}

func (r *responder) init(start psn.PSN, rnrCode uint8, window int) {
	*r = responder{epsn: start, rnrCode: rnrCode, recvs: r.recvs, recvHead: r.recvHead, window: window}
}

func (r *responder) hasCtrl() bool { return r.cnpPending || r.nakPending || r.ackPending }

func (r *responder) clearCtrl() {
	r.cnpPending, r.nakPending, r.ackPending, r.becnPending = false, false, false, false
}

// nak queues a NAK of the expected PSN with syndrome syn.
func (r *responder) nak(syn uint8) {
	r.nakPending, r.nakSyn, r.nakPSN, r.nakSent = true, syn, r.epsn, true
}

// recvData validates, places and acknowledges one data packet.
func (r *responder) recvData(q *QP, now mtime.Time, p *Packet, phantom bool) {
	e := q.ep
	if p.IP.ECN() == wire.CE {
		q.stats.CEReceived++
		switch {
		case q.cc:
			// Notification point: a CNP at once, unless one went out
			// within the CNP interval (DCQCN §3.1).
			if !r.cnpSent || now.Sub(r.cnpAt) >= e.cfg.DCQCN.CNPInterval {
				r.cnpPending, r.cnpSent, r.cnpAt = true, true, now
			} else {
				q.stats.CNPsSuppressed++
			}
		case q.ext != nil:
			// IB: a FECN is answered at once by an ACK carrying BECN
			// (IBTA Vol. 1 Annex A10).
			r.becnPending, r.ackPending = true, true
		}
	}
	n := psn.PSN(p.BTH.PSN)
	switch d := n.Sub(r.epsn); {
	case d < 0:
		// A duplicate: our ACK went missing or the requester timed out.
		// Say again where we are.
		q.stats.Duplicates++
		r.ackPending = true
		return
	case d > 0 && d < r.window:
		r.hold(q, n, d, p, phantom)
		return
	case d > 0:
		// Out of sequence: drop, and NAK the first of a gap only.
		q.stats.OutOfSequence++
		e.drop(now, &q.stats, q.qpn, verbs.DropOutOfWindow)
		if !r.nakSent {
			r.nak(synKindNAK<<synKindShift | NakPSNSeqError)
		}
		return
	}
	if !r.accept(q, now, p, phantom) {
		return
	}
	q.stats.PayloadArrived += uint64(p.PayloadLen)
	if r.window > 0 {
		r.drain(q, now)
	}
}

// hold keeps data packet p, PSN n, d ahead of the expected PSN, until
// the gap before it fills (out-of-order reception). A packet already
// held is a duplicate.
func (r *responder) hold(q *QP, n psn.PSN, d int, p *Packet, phantom bool) {
	if d >= len(r.ahead) {
		r.grow(d)
	}
	h := &r.ahead[uint32(n)&uint32(len(r.ahead)-1)]
	if h.has {
		q.stats.Duplicates++
		return
	}
	q.stats.Reordered++
	q.stats.PayloadArrived += uint64(p.PayloadLen)
	*h = held{psn: n, has: true, phantom: phantom, ackReq: p.BTH.AckReq, op: p.Opcode(), size: p.PayloadLen,
		reth: p.RETH, imm: p.Imm, payload: append(h.payload[:0], p.Payload...)}
}

// grow makes the ring of held packets large enough for a packet d ahead.
func (r *responder) grow(d int) {
	n := max(16, len(r.ahead))
	for n <= d {
		n *= 2
	}
	old := r.ahead
	r.ahead = make([]held, n)
	for _, h := range old {
		if h.has {
			r.ahead[uint32(h.psn)&uint32(n-1)] = h
		}
	}
}

// drain takes, in PSN order, the held packets that now follow the
// expected PSN without a gap.
func (r *responder) drain(q *QP, now mtime.Time) {
	for len(r.ahead) > 0 {
		h := &r.ahead[uint32(r.epsn)&uint32(len(r.ahead)-1)]
		if !h.has || h.psn != r.epsn {
			return
		}
		h.has = false
		p := Packet{BTH: wire.BTH{Opcode: wire.Opcode(h.op), PSN: uint32(h.psn), AckReq: h.ackReq},
			RETH: h.reth, Imm: h.imm, PayloadLen: h.size, Payload: h.payload}
		if !r.accept(q, now, &p, h.phantom) {
			return
		}
	}
}

// accept takes data packet p, which carries the expected PSN: it checks
// the opcode sequence, the lengths and the memory, places the payload
// and acknowledges, and reports whether the expected PSN advanced.
func (r *responder) accept(q *QP, now mtime.Time, p *Packet, phantom bool) bool {
	e := q.ep
	n := psn.PSN(p.BTH.PSN)
	// Check the opcode sequence and the lengths (IBTA Vol. 1
	// §9.7.5.1.2–3).
	op := p.Opcode()
	size := p.PayloadLen
	mtu := e.cfg.MTU
	valid := op.starts() != r.inMsg
	if valid {
		switch op {
		case OpWriteFirst:
			valid = size == mtu && p.RETH.DMALen > uint32(mtu)
		case OpWriteMiddle:
			valid = size == mtu && r.left > uint64(mtu)
		case OpWriteLast, OpWriteLastImm:
			valid = size > 0 && uint64(size) == r.left
		default: // ONLY
			valid = size == int(p.RETH.DMALen) && size <= mtu
		}
	}
	if !valid {
		e.drop(now, &q.stats, q.qpn, verbs.DropMalformed)
		r.nak(synKindNAK<<synKindShift | NakInvalidRequest)
		return false
	}

	// Memory: a new message is checked whole against its region, a
	// continuing one packet by packet (the region may have gone).
	rkey, va, span := r.rkey, r.va, uint64(size)
	if op.starts() {
		rkey, va, span = p.RETH.RKey, p.RETH.VA, uint64(p.RETH.DMALen)
	}
	var dst []byte
	if span > 0 {
		reg := e.mem.Lookup(rkey)
		if reg == nil {
			e.drop(now, &q.stats, q.qpn, verbs.DropBadRKey)
			r.nak(synKindNAK<<synKindShift | NakRemoteAccess)
			return false
		}
		off, ok := reg.Span(va, span)
		if !ok {
			e.drop(now, &q.stats, q.qpn, verbs.DropBounds)
			r.nak(synKindNAK<<synKindShift | NakRemoteAccess)
			return false
		}
		if phantom != (reg.Buf == nil) {
			e.drop(now, &q.stats, q.qpn, verbs.DropPhantom)
			return false
		}
		if reg.Buf != nil {
			dst = reg.Buf[off : off+uint64(size)]
		}
	}
	if op.HasImm() && r.recvHead == len(r.recvs) {
		// Receiver not ready: the requester resends from here after the
		// RNR timer (IBTA Vol. 1 §9.7.5.2.8).
		r.nak(synRNR | r.rnrCode)
		return false
	}

	copy(dst, p.Payload)
	r.epsn = n.Add(1)
	r.nakSent = false
	if op.starts() {
		r.rkey, r.va, r.left, r.dmaLen = rkey, va, uint64(p.RETH.DMALen), p.RETH.DMALen
	}
	r.va += uint64(size)
	r.left -= uint64(size)
	r.inMsg = !op.ends()
	q.stats.DataReceived++
	q.stats.PayloadReceived += uint64(size)
	q.tracePacket(now, trace.PacketReceived, n, size, "")
	if op.ends() {
		r.msn = (r.msn + 1) & (1<<24 - 1)
		if op.HasImm() {
			e.emit(verbs.Event{Kind: verbs.EventRecvImm, Time: now, QPN: q.qpn, WRID: r.recvs[r.recvHead],
				Bytes: uint64(r.dmaLen), Imm: uint32(p.Imm)})
			q.stats.ImmsDelivered++
			if r.recvHead++; r.recvHead == len(r.recvs) {
				r.recvs, r.recvHead = r.recvs[:0], 0
			}
		}
	}
	if r.sinceAck++; p.BTH.AckReq || r.sinceAck >= e.cfg.AckEvery {
		r.ackPending = true
	}
	return true
}

// writeCtrl writes q's most urgent control packet into buf: a CNP, then
// a NAK (which also acknowledges what precedes it), then an ACK.
func (r *responder) writeCtrl(q *QP, now mtime.Time, buf []byte) (verbs.Transmit, bool) {
	e := q.ep
	pk := &e.tx
	pk.PayloadLen = 0
	if r.cnpPending {
		r.cnpPending = false
		q.address(pk, e.cfg.CNPDSCP, wire.NotECT)
		pk.BTH = wire.BTH{Opcode: wire.Opcode(OpCNP), PKey: wire.PKeyDefault, Resv8a: becn, DestQP: q.remoteQPN}
		n := len(AppendPacket(buf[:0], pk, nil))
		q.stats.CNPsSent++
		q.traceCtrl(now, 0, "cnp")
		return verbs.Transmit{Port: q.port, Len: n, WireLen: n, QPN: q.qpn, Kind: KindCNP}.Addressed(pk.IP.Dst, &pk.IP, &pk.UDP), true
	}
	syn, at, kind, reason := uint8(synACK), r.epsn.Add(-1), KindACK, "ack"
	switch {
	case r.nakPending && r.nakPSN == r.epsn:
		syn, at, kind = r.nakSyn, r.epsn, KindNAK
		q.stats.NACKsSent++
		switch {
		case syn>>synKindShift == synKindRNR:
			q.stats.RNRNAKsSent++
			reason = "rnr_nak"
		case syn&synValueMask == NakPSNSeqError:
			q.stats.SeqNAKsSent++
			reason = "psn_seq_error"
		default:
			q.stats.FatalNAKsSent++
			reason = "fatal_nak"
		}
	case r.ackPending:
		q.stats.SACKsSent++
	default:
		r.nakPending = false // stale: the expected PSN arrived since
		return verbs.Transmit{}, false
	}
	r.nakPending, r.ackPending, r.sinceAck = false, false, 0
	q.address(pk, e.cfg.DSCP, wire.ECT0)
	pk.BTH = wire.BTH{Opcode: wire.Opcode(OpAck), PKey: wire.PKeyDefault, DestQP: q.remoteQPN, PSN: uint32(at)}
	if r.becnPending {
		r.becnPending = false
		pk.BTH.Resv8a = becn
		q.stats.BECNsSent++
	}
	pk.AETH = wire.AETH{Syndrome: syn, MSN: r.msn}
	n := len(AppendPacket(buf[:0], pk, nil))
	q.traceCtrl(now, at, reason)
	return verbs.Transmit{Port: q.port, Len: n, WireLen: n, QPN: q.qpn, Kind: kind}.Addressed(pk.IP.Dst, &pk.IP, &pk.UDP), true
}

// traceCtrl traces a control packet. The trace schema has no ACK or CNP
// kinds: they are SACKSent records with Reason "ack", "psn_seq_error",
// "rnr_nak", "fatal_nak" or "cnp".
func (q *QP) traceCtrl(now mtime.Time, p psn.PSN, reason string) {
	if t := q.ep.cfg.Tracer; t != nil {
		t.Trace(&trace.Record{Time: now, Kind: trace.SACKSent, QPN: q.qpn, PSN: uint32(p),
			EV: wire.JoinEV(q.sport, q.flow), Plane: q.port, Reason: reason})
	}
}
