package mrc

import (
	"time"

	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/memreg"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/internal/rxwin"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// The responder: validation and out-of-order placement of the peer's WRITEs,
// the PSN tracking window, in-order WRITE_IMM completion, and SACK/NACK
// generation (digest §3.3, §3.6).

// immSlot holds a WRITE_IMM whose packets are not all in yet.
type immSlot struct {
	psn   psn.PSN // PSN of its last packet
	imm   uint32
	bytes uint32
	key   uint16 // its RQMSN modulo maxWimm (receiver.imms)
	valid bool
}

// trigger is the packet a SACK answers: its PSN, EV and marks are reflected.
type trigger struct {
	psn   psn.PSN
	ev    uint32
	port  int
	ts    uint16
	ce    bool
	probe bool
	dup   bool       // a duplicate that asked for an acknowledgement
	rtx   bool       // a retransmission (BTH.rtx)
	timed bool       // ts is a real tx_timestamp (TSETH or PETH)
	at    mtime.Time // when the packet arrived
}

type receiver struct {
	win       *rxwin.Window
	maxWimm   int
	immNext   uint16 // RQMSN of the next WRITE_IMM to complete
	penalty   uint8  // rcv_cwnd_pen to advertise
	restore   bool   // advertise r_c on the next SACK
	started   bool
	imms      []immSlot // by RQMSN modulo maxWimm, hashed: see immAt
	recvs     []uint64  // posted receives, oldest first
	recvHead  int
	rcvdBytes uint64

	// SACK coalescing: PSNs received and not yet reported.
	pendLo, pendHi psn.PSN
	pendN          int
	pendDue        mtime.Time // when the pending PSNs must be reported
	trig           trigger

	acks *acks // allocated when the QP first has something to acknowledge
}

// acks is the responder's acknowledgement state: the SACKs and NACKs
// waiting to go out and what reverse-path repair needs. A QP that only
// sends never allocates it (a large simulation has half its QPs so).
type acks struct {
	ctrl ctrlQueue
	// Which SACK first reported each PSN, and which EV carried each
	// recent SACK: a retransmission of a PSN already received means that
	// SACK was lost, so its EV is suspect (the reverse-path repair of
	// docs/spec-gaps.md).
	report    [reportLen]uint32 // by PSN modulo reportLen: see reportEntry
	sackSeq   uint16            // sequence number of the next SACK
	sackSlots [64]sentSACK

	// The EV last probed, how often in a row, and the SACK that answered.
	probeEV      uint32
	probeRepeats int
	probeAnswer  uint16

	// Per-RTT allowances of answers to trimmed headers, duplicates and
	// probes, and of RoCE NAKs of protection errors: one for first
	// transmissions, one for retransmissions (which confirm an error to
	// the requester: onAETH).
	trimNACKs, dupSACKs, probeSACKs, oorNACKs budget
	protNAKs, protNAKsRtx                     budget

	load senderLoad // the peer's offered load (rcvfc.go)
}

// ack returns the acknowledgement state, allocating it on first use.
func (r *receiver) ack() *acks {
	if r.acks == nil {
		r.acks = new(acks)
	}
	return r.acks
}

// queue adds a SACK or NACK to the control queue, counting what a full
// queue drops.
func (r *receiver) queue(q *QP, c ctrlPkt) { *r.queueNew(q) = c }

// queueNew adds a zero entry to the control queue for the caller to fill
// in place, counting what a full queue drops.
func (r *receiver) queueNew(q *QP) *ctrlPkt {
	c, dropped := r.ack().ctrl.add()
	if dropped {
		q.stats.ControlDropped++
	}
	return c
}

// onProbe answers a reliability probe with a SACK (digest §3.7). A
// requester probes an EV until enough probes are answered, so a probe of
// the same EV arriving again after that many answers means the answers
// are being lost on the way back: the EV the last one took is suspect, as
// with a repeated retransmission (suspectReverse).
func (r *receiver) onProbe(q *QP, now mtime.Time, port int, p *wire.Packet) {
	ev := uint32(evOf(p))
	a := r.ack()
	if !q.allowAnswer(now, &a.probeSACKs, q.evs.Len()) {
		return
	}
	if ev == a.probeEV {
		a.probeRepeats++
	} else {
		a.probeEV, a.probeRepeats = ev, 0
	}
	if a.probeRepeats >= probeRepeatsSuspect {
		a.probeRepeats = 0
		r.suspectSACK(q, now, a.probeAnswer)
	}
	// The answer's ack_psn_offset names the PSN the probe carries (the
	// requester's oldest unacknowledged one), so that the requester reads
	// from cack_psn whether that PSN has arrived.
	// A probe naming a PSN that is already here means the SACK that
	// reported it was lost, as a retransmission of it would
	// (suspectReverse; the requester probes before it resends).
	if n := psn.PSN(p.BTH.PSN); n.Less(r.win.Next()) || r.win.Has(n) {
		r.suspectReverse(q, now, n)
	}
	r.trig = trigger{psn: psn.PSN(p.BTH.PSN), ev: ev, port: port, ts: p.Probe.TS.TxTimestamp, ce: ceOf(p), probe: true, timed: true, at: now}
	a.probeAnswer = a.sackSeq
	r.flushSACK(q, true)
}

// probeRepeatsSuspect is how many probes of one EV, beyond the first, make
// its answers suspect: one more than the successes that resurrect an EV
// by default (evset.Config.ProbeSuccesses).
const probeRepeatsSuspect = 4

// ctrlPending reports whether SACKs or NACKs wait to go out.
func (r *receiver) ctrlPending() bool { return r.acks != nil && r.acks.ctrl.size > 0 }

// reportLen is how many recent PSNs remember the SACK that reported them:
// a retransmission arrives about one loss timeout after the original, a
// window's worth of PSNs at most.
const reportLen = 256

// reportEntry packs the sequence number of the SACK that first reported
// PSN n with n's bits above the ring index (n>>8: the top 16 of its 24
// bits), so that an entry left by an older PSN is recognised.
func reportEntry(n psn.PSN, seq uint16) uint32 {
	return uint32(seq)<<16 | uint32(n>>8)&0xffff
}

// sentSACK records the EV a SACK went out on, in 4 bytes: with 64 of
// them the acknowledgement state fits 1,792 B, not 2,048 B.
type sentSACK struct {
	seq   uint16
	slot1 evset.Slot // the EV's slot + 1 (slots are below evset.MaxEVs); 0: none
}

func (r *receiver) init(start psn.PSN, mpr, maxWimm int) {
	*r = receiver{
		win:     rxwin.New(start, mpr*128),
		maxWimm: maxWimm,
		recvs:   r.recvs, // receives may be posted from INIT on
		started: true,
	}
}

// suspectReverse retires the EV of the SACK that first reported n, which
// the requester evidently never got.
func (r *receiver) suspectReverse(q *QP, now mtime.Time, n psn.PSN) {
	e := r.ack().report[n%reportLen]
	seq := uint16(e >> 16)
	if e != reportEntry(n, seq) {
		return // the entry belongs to an older PSN
	}
	r.suspectSACK(q, now, seq)
}

// suspectSACK retires the EV that SACK seq went out on, once.
func (r *receiver) suspectSACK(q *QP, now mtime.Time, seq uint16) {
	a := r.ack()
	ss := &a.sackSlots[seq%uint16(len(a.sackSlots))]
	if ss.slot1 == 0 || ss.seq != seq {
		return
	}
	slot := ss.slot1 - 1
	ss.slot1 = 0
	if !q.evp.Oblivious {
		q.retirePath(now, slot)
	}
}

func (r *receiver) deadline() mtime.Time {
	if r.pendN == 0 {
		return mtime.Never
	}
	return r.pendDue
}

func (r *receiver) onTimer(q *QP, now mtime.Time) {
	if r.pendN > 0 && r.pendDue <= now {
		r.flushSACK(q, false)
	}
}

// SetReceivePenalty sets the responder flow-control penalty rcv_cwnd_pen
// (0..127) advertised in every SACK (digest §3.8): 127 asks the requester
// for about one packet per RTT. Setting it back to 0 asks the requester to
// restore its window.
func (q *QP) SetReceivePenalty(pen uint8) {
	pen = min(pen, 127)
	if pen == 0 && q.rx.penalty > 0 {
		q.rx.restore = true
	}
	q.rx.penalty = pen
}

// handle processes a packet addressed to q.
func (q *QP) handle(now mtime.Time, port int, p *wire.Packet, phantom bool) {
	q.now = now
	if q.state < verbs.StateRTR || q.state == verbs.StateError {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropQPState)
		return
	}
	if p.IP.Src != q.remote[port] {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropBadSource)
		return
	}
	switch op := p.BTH.Opcode; {
	case op.IsData():
		q.recvData(now, port, p, phantom)
	case op == wire.OpSACK && q.state == verbs.StateRTS:
		q.tx.onSACK(q, now, port, &p.SACK)
	case op == wire.OpSACK && p.SACK.PR:
		// The answer to a reliability probe of a QP that does not
		// send (it probes with EV probes since, evprobe.go, but an
		// answer may be in flight when it changes state).
		q.stats.SACKsReceived++
		q.pathFeedback(now, &p.SACK)
	case op == wire.OpNACK && q.state == verbs.StateRTS:
		q.tx.onNACK(q, now, port, &p.NACK)
	case op == wire.OpAck && q.state == verbs.StateRTS && nakError(p.AETH.Syndrome) != nil:
		q.tx.onAETH(q, now, port, psn.PSN(p.BTH.PSN), p.AETH.Syndrome)
	case op == wire.OpProbe:
		q.rx.onProbe(q, now, port, p)
	default:
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropNotMRC)
	}
}

func evOf(p *wire.Packet) wire.EV {
	fl := p.IP.FlowLabel
	if p.Encap {
		fl = p.Outer.FlowLabel
	}
	return wire.JoinEV(p.UDP.SrcPort, fl)
}

// ceOf reports a CE mark on the packet (on either header when
// encapsulated, RFC 6040).
func ceOf(p *wire.Packet) bool {
	return p.IP.ECN() == wire.CE || p.Encap && p.Outer.ECN() == wire.CE
}

// recvData validates, places and acknowledges one data packet. A trimmed
// header, a duplicate and a new packet all pass the same window, key,
// access and bounds checks before anything answers them (no
// amplification: docs/security.md).
func (q *QP) recvData(now mtime.Time, port int, p *wire.Packet, phantom bool) {
	e, r := q.ep, &q.rx
	n := psn.PSN(p.BTH.PSN)
	t0 := trigger{psn: n, ev: uint32(evOf(p)), port: port, ts: p.TSETH.TxTimestamp, ce: ceOf(p), timed: p.BTH.TS, rtx: p.BTH.Rtx, at: now}
	dscp := p.OuterDSCP()
	trimmed := p.Trimmed || e.cfg.DSCP.IsTrim(dscp)
	d := n.Sub(r.win.Next())
	if d >= r.win.Size() {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropOutOfWindow)
		q.nackOutOfWindow(now, t0, p, phantom, trimmed)
		return
	}
	fresh := d >= 0 && !r.win.Has(n)
	reg, off, why := q.placement(p, phantom, trimmed, fresh)
	if why != dropNone {
		q.ep.drop(now, &q.stats, q.qpn, why)
		if fresh {
			q.nakProtection(now, t0, why, p.METH.MSN, p.BTH.Rtx)
		}
		return
	}
	if trimmed {
		if fresh {
			// Its payload is gone; a full packet is the usual size.
			q.noteSender(now, uint64(min(p.RETH.DMALen, uint32(e.cfg.MTU))))
		}
		q.recvTrimmed(now, t0, fresh, dscp == e.cfg.DSCP.TrimmedLastHop)
		return
	}
	if !fresh {
		// Already here. A retransmission or an ACK request means our
		// SACK went missing: say it again.
		q.stats.Duplicates++
		if p.BTH.Rtx {
			r.suspectReverse(q, now, n)
		}
		if (p.BTH.Rtx || p.BTH.AckReq) && q.allowAnswer(now, &r.ack().dupSACKs, r.win.Size()) {
			// The SACK must name this PSN, or the requester times it
			// out and resends it for as long as the hole before it
			// lasts: report what is pending first if its bitmap
			// would leave this PSN out.
			if r.pendN > 0 && !r.reports(r.sackBase(), n) {
				r.flushSACK(q, false)
			}
			r.trig = t0
			r.trig.dup = true
			r.flushSACK(q, false)
		}
		return
	}
	size := uint64(p.PayloadLen)
	q.noteSender(now, size)
	var rq uint16
	if p.BTH.Opcode.HasImm() {
		rq = p.METH.RQMSN
	}
	if reg.Buf != nil {
		copy(reg.Buf[off:off+size], p.Payload[:size])
	}

	// Coalesce the report; flush first if this PSN would stretch the
	// pending range past one bitmap.
	if r.pendN > 0 && (max(r.pendHi.Sub(n), n.Sub(r.pendLo)) >= 64) {
		r.flushSACK(q, false)
	}
	r.win.Mark(n)
	q.noteWhole(n, p.BTH.Opcode.EndsMessage())
	a := r.ack()
	a.report[n%reportLen] = reportEntry(n, a.sackSeq)
	r.rcvdBytes += size
	q.stats.DataReceived++
	q.stats.PayloadReceived += size
	if t0.ce {
		q.stats.CEReceived++
	}
	if t := e.cfg.Tracer; t != nil {
		e.trace(t, trace.Record{Time: now, Kind: trace.PacketReceived, QPN: q.qpn, PSN: uint32(n), EV: wire.EV(t0.ev), Plane: port, Bytes: int(size)})
	}
	if p.BTH.Opcode.HasImm() {
		k := int(rq) % r.maxWimm
		*r.immFor(k) = immSlot{psn: n, imm: uint32(p.Imm), bytes: p.RETH.DMALen, key: uint16(k), valid: true}
	}
	r.deliverImms(q, now)

	if r.pendN == 0 {
		r.pendLo, r.pendHi, r.pendDue = n, n, now.Add(e.cfg.SackDelay)
		q.timerDirty = true
	} else {
		if n.Less(r.pendLo) {
			r.pendLo = n
		}
		if r.pendHi.Less(n) {
			r.pendHi = n
		}
	}
	r.pendN++
	r.trig = t0
	if t0.ce || p.BTH.Rtx || p.BTH.AckReq || r.pendN >= e.cfg.SackEvery {
		r.flushSACK(q, false)
	}
}

// placement checks that p may be placed by this QP: its R_Key names a
// region of the QP's protection domain open to remote writes, its range
// lies inside, phantom payloads go only to phantom regions, and a
// WRITE_IMM not yet received carries an RQMSN inside the responder's
// limit. It returns the region and the offset of p's payload in it, or
// why p must be dropped. A bad RQMSN is dropped, not NACKed: anyone can
// forge one, and WIMM_LIMIT would fail the honest requester's QP.
func (q *QP) placement(p *wire.Packet, phantom, trimmed, fresh bool) (*memreg.Region, uint64, verbs.DropReason) {
	reg := q.ep.mem.Lookup(p.RETH.RKey)
	if reg == nil {
		return nil, 0, verbs.DropBadRKey
	}
	if !reg.Writable(q.pd) {
		return nil, 0, verbs.DropAccess
	}
	size := uint64(p.PayloadLen)
	if trimmed {
		size = 0 // the payload is gone; its address must still be valid
	}
	off, ok := reg.Span(p.RETH.VA, size)
	if !ok || size > uint64(p.RETH.DMALen) {
		return nil, 0, verbs.DropBounds
	}
	if !trimmed && phantom != (reg.Buf == nil) {
		return nil, 0, verbs.DropPhantom
	}
	r := &q.rx
	if d := int16(p.METH.RQMSN - r.immNext); fresh && p.BTH.Opcode.HasImm() && (d < 0 || int(d) >= r.maxWimm) {
		return nil, 0, verbs.DropWimmLimit
	}
	return reg, off, dropNone
}

// protSyndrome returns the RoCE NAK syndrome that reports a failed memory
// check, or 0 for a drop that stays silent.
func protSyndrome(why verbs.DropReason) uint8 {
	switch why {
	case verbs.DropBadRKey, verbs.DropAccess, verbs.DropBounds:
		return wire.AETHNakRemoteAccess
	case verbs.DropPhantom:
		return wire.AETHNakInvalidRequest
	}
	return 0
}

// nakProtection answers a packet that passed the QP, source and ICRC
// checks but failed a memory check with a RoCE NAK (AETH), so that the
// requester fails the QP with the cause rather than blaming its paths
// (docs/spec-gaps.md, "Protection errors"). At most one NAK of a first
// transmission and one of a retransmission go out per RTT: a forged
// packet gets at most one small answer.
func (q *QP) nakProtection(now mtime.Time, t0 trigger, why verbs.DropReason, msn uint16, rtx bool) {
	syn := protSyndrome(why)
	if syn == 0 {
		return
	}
	a := q.rx.ack()
	b := &a.protNAKs
	if rtx {
		b = &a.protNAKsRtx
	}
	if !q.allowAnswer(now, b, 1) {
		return
	}
	q.rx.queue(q, ctrlPkt{kind: verbs.KindNACK, seq: msn, port: t0.port, psn: t0.psn, ev: t0.ev, ts: t0.ts, aeth: syn})
	q.ep.markReady(q)
}

// oorNACKsPerRTT bounds the PSN_OOR_WINDOW NACKs a QP sends per RTT. One
// is enough: the requester takes every PSN from the NACKed one onwards out
// of flight and shrinks its window (onNACK).
const oorNACKsPerRTT = 2

// nackOutOfWindow answers a packet beyond the tracking window with a
// PSN_OOR_WINDOW NACK (digest §3.3), so that the requester backs off
// instead of timing the packet out and blaming its EV. Only a packet
// whose key and address checks pass is answered, at most oorNACKsPerRTT
// times per RTT: like every answer, it must not amplify a forgery.
func (q *QP) nackOutOfWindow(now mtime.Time, t0 trigger, p *wire.Packet, phantom, trimmed bool) {
	if _, _, why := q.placement(p, phantom, trimmed, false); why != dropNone {
		return
	}
	r := &q.rx
	if !q.allowAnswer(now, &r.ack().oorNACKs, oorNACKsPerRTT) {
		return
	}
	r.queue(q, ctrlPkt{kind: verbs.KindNACK, port: t0.port, psn: t0.psn, ev: t0.ev, ts: t0.ts, reason: wire.NackPSNOORWindow})
	q.ep.markReady(q)
}

// recvTrimmed NACKs a trimmed header at once, so that the requester
// resends in about one RTT (digest §3.6, §3.9), unless its PSN is already
// here or the QP's trim NACKs for this RTT are spent.
func (q *QP) recvTrimmed(now mtime.Time, t0 trigger, fresh, lastHop bool) {
	e, r := q.ep, &q.rx
	q.stats.TrimmedReceived++
	if t := e.cfg.Tracer; t != nil {
		e.trace(t, trace.Record{Time: now, Kind: trace.PacketTrimmed, QPN: q.qpn, PSN: uint32(t0.psn), EV: wire.EV(t0.ev), Plane: t0.port})
	}
	if !fresh || !q.allowAnswer(now, &r.ack().trimNACKs, r.win.Size()) {
		return
	}
	reason := wire.NackTrimmed
	if lastHop {
		reason = wire.NackTrimmedLastHop
	}
	// The NACK carries the trimmed header's CE mark (digest §3.6), so
	// that a last-hop trim of a packet marked earlier in the fabric still
	// penalises its EV.
	m := wire.SackNone
	if t0.ce {
		m = wire.SackSkipOnce
	}
	r.queue(q, ctrlPkt{kind: verbs.KindNACK, port: t0.port, psn: t0.psn, ev: t0.ev, ts: t0.ts, m: m, reason: reason})
	e.markReady(q)
}

// budget bounds how often something may happen: at most n times in each
// interval.
type budget struct {
	left  int
	until mtime.Time
}

// take uses one of the n allowed per interval and reports whether one
// was left.
func (b *budget) take(now mtime.Time, n int, interval time.Duration) bool {
	if now >= b.until {
		b.left, b.until = n, now.Add(interval)
	}
	if b.left == 0 {
		return false
	}
	b.left--
	return true
}

// allowAnswer takes one answer from b, whose allowance per RTT is n, and
// reports whether any was left; a withheld answer is counted. The RTT is
// the smoothed one when known, else the configured base RTT.
func (q *QP) allowAnswer(now mtime.Time, b *budget, n int) bool {
	if !b.take(now, n, max(q.ep.cfg.BaseRTT, q.tx.srtt)) {
		q.stats.AnswersWithheld++
		return false
	}
	return true
}

// deliverImms completes, in order, every WRITE_IMM whose packets and
// predecessors have all arrived and for which a receive is posted.
func (r *receiver) deliverImms(q *QP, now mtime.Time) {
	if !r.started || r.imms == nil {
		return
	}
	for r.recvHead < len(r.recvs) {
		k := int(r.immNext) % r.maxWimm
		s := r.immAt(k)
		if !s.valid || int(s.key) != k || !s.psn.Less(r.win.Next()) {
			return
		}
		q.ep.emit(verbs.Event{Kind: verbs.EventRecvImm, Time: now, QPN: q.qpn, WRID: r.recvs[r.recvHead], Bytes: uint64(s.bytes), Imm: s.imm})
		q.stats.ImmsDelivered++
		*s = immSlot{}
		r.immNext++
		r.recvHead++
		if r.recvHead == len(r.recvs) {
			r.recvs, r.recvHead = r.recvs[:0], 0
		}
	}
}

// The WRITE_IMMs waiting for their last packets or their predecessors
// are kept by key, RQMSN modulo maxWimm, as in a table of maxWimm slots.
// The table starts small and grows as keys collide, up to maxWimm slots:
// a QP usually has a few WRITE_IMMs in progress, and 128 slots of 16
// bytes for each receiving QP were 2 KB a host on --preset big. Below
// maxWimm slots (a power of two) key k lives in slot k mod len; at
// maxWimm, in slot k. A slot with another key holds nothing for k.
const immSlotsStart = 4

// immAt returns the slot where key k lives, if anywhere.
func (r *receiver) immAt(k int) *immSlot {
	if len(r.imms) == r.maxWimm {
		return &r.imms[k]
	}
	return &r.imms[k&(len(r.imms)-1)]
}

// immFor returns the slot for key k, empty or holding k, growing the
// table until k has one.
func (r *receiver) immFor(k int) *immSlot {
	if r.imms == nil {
		r.imms = make([]immSlot, min(immSlotsStart, r.maxWimm))
	}
	for {
		if s := r.immAt(k); !s.valid || int(s.key) == k {
			return s
		}
		r.growImms()
	}
}

// growImms doubles the WRITE_IMM table, or makes it maxWimm slots when
// that is no more, moving every waiting WRITE_IMM to its new slot; it
// doubles again while two of them would share one.
func (r *receiver) growImms() {
	for n := 2 * len(r.imms); ; n *= 2 {
		old := r.imms
		r.imms = make([]immSlot, min(n, r.maxWimm))
		moved := true
		for _, s := range old {
			if !s.valid {
				continue
			}
			d := r.immAt(int(s.key))
			if d.valid {
				moved = false
				break
			}
			*d = s
		}
		if moved {
			return
		}
		r.imms = old
	}
}

// sackBase returns the first PSN of the next SACK's bitmap: the
// cumulative point when the pending PSNs fit in one bitmap from there, so
// PSNs a lost SACK reported are repeated, else the first pending PSN.
func (r *receiver) sackBase() psn.PSN {
	next := r.win.Next()
	if r.pendN > 0 && r.pendHi.Sub(next) >= 64 && next.Less(r.pendLo) {
		return r.pendLo
	}
	return next
}

// reports reports whether a SACK whose bitmap starts at base
// acknowledges n, cumulatively or in the bitmap.
func (r *receiver) reports(base, n psn.PSN) bool {
	d := n.Sub(base)
	return n.Less(r.win.Next()) || d >= 0 && d < 64
}

// flushSACK queues a SACK for the pending PSNs, reflecting r.trig. A SACK
// answering a duplicate (r.trig.dup) or a probe names the PSN it carries:
// its bitmap starts there when the cumulative point is 64 PSNs or more
// behind, so the answer says whether that PSN arrived.
func (r *receiver) flushSACK(q *QP, probe bool) {
	next := r.win.Next()
	cack := next.Add(-1)
	base := r.sackBase()
	if (r.trig.dup || probe) && !r.reports(base, r.trig.psn) {
		base = r.trig.psn
	}
	m := wire.SackNone
	if r.trig.ce {
		m = wire.SackSkipOnce
	}
	a := r.ack()
	// Filled in place, field by field (see Endpoint.address): this runs
	// for every few packets.
	c := r.queueNew(q)
	c.kind, c.seq, c.port, c.psn = verbs.KindSACK, a.sackSeq, r.trig.port, cack
	c.ackOff, c.sackOff, c.bitmap = clamp16(r.trig.psn.Sub(cack)), clamp16(base.Sub(cack)), r.win.Bitmap(base)
	c.ev, c.ts, c.timed, c.at = r.trig.ev, r.trig.ts, r.trig.timed, r.trig.at
	c.m, c.probe, c.rtx, c.ooo = m, probe, r.trig.rtx && !probe, uint16(min(r.win.Ahead(), 1<<15-1))
	c.rcvd, c.pen, c.restore = uint32((r.rcvdBytes+255)/256), q.rcvPenalty(q.now, probe), r.restore
	r.restore = false
	r.pendN = 0
	a.sackSeq++
	q.ep.markReady(q)
}

func clamp16(v int) int16 { return int16(max(min(v, 1<<15-1), -1<<15)) }

// ctrlPkt is a queued SACK or NACK.
type ctrlPkt struct {
	kind    verbs.PacketKind
	seq     uint16 // SACK sequence number
	port    int    // the plane the trigger arrived on; preferred for the reply
	psn     psn.PSN
	ackOff  int16
	sackOff int16
	bitmap  uint64
	ev      uint32
	ts      uint16
	timed   bool          // ts is a tx_timestamp: add the hold time (holdStamp)
	at      mtime.Time    // when the trigger arrived
	m       wire.SackMode // a NACK's CE flag is m == SackSkipOnce
	probe   bool
	rtx     bool // the trigger was a retransmission
	ooo     uint16
	rcvd    uint32
	pen     uint8
	restore bool
	reason  wire.NackReason
	aeth    uint8 // a RoCE NAK with this AETH syndrome (seq is the MSN) instead of a NACK
}

// ctrlQueue is a bounded FIFO of control packets. When full, it drops the
// oldest entry that does not answer a probe (a later SACK repeats its
// cumulative information; a lost probe answer delays a resurrection). Its
// ring starts small and doubles up to ctrlQueueLen: most responders hold
// one or two entries at a time, and a large simulation has one responder
// per host.
type ctrlQueue struct {
	buf        []ctrlPkt // a power of two long
	head, size int
}

const (
	ctrlQueueLen   = 32
	ctrlQueueStart = 4
)

// push queues p and reports whether an older entry had to be dropped.
func (c *ctrlQueue) push(p ctrlPkt) (dropped bool) {
	e, dropped := c.add()
	*e = p
	return dropped
}

// at returns the i-th oldest entry.
func (c *ctrlQueue) at(i int) *ctrlPkt { return &c.buf[(c.head+i)&(len(c.buf)-1)] }

// add queues a zero entry and returns it, reporting whether an older
// entry had to be dropped.
func (c *ctrlQueue) add() (e *ctrlPkt, dropped bool) {
	switch {
	case c.size == ctrlQueueLen:
		victim := 0
		for i := range c.size {
			if !c.at(i).probe {
				victim = i
				break
			}
		}
		for i := victim; i > 0; i-- {
			*c.at(i) = *c.at(i - 1)
		}
		c.head = (c.head + 1) & (len(c.buf) - 1)
		c.size--
		dropped = true
	case c.size == len(c.buf):
		buf := make([]ctrlPkt, max(ctrlQueueStart, 2*len(c.buf)))
		for i := range c.size {
			buf[i] = *c.at(i)
		}
		c.buf, c.head = buf, 0
	}
	e = c.at(c.size)
	*e = ctrlPkt{}
	c.size++
	return e, dropped
}

func (c *ctrlQueue) peek() *ctrlPkt { return &c.buf[c.head] }

func (c *ctrlQueue) pop() {
	c.head = (c.head + 1) & (len(c.buf) - 1)
	c.size--
}

func (c *ctrlQueue) clear() { c.head, c.size = 0, 0 }

// holdStamp returns the tx_timestamp a SACK reflects: the trigger's, plus
// the time the responder held the SACK since the trigger arrived
// (coalescing, the control queue), in the same 128 ns units. The requester
// subtracts the reflected stamp from its clock, so its RTT sample excludes
// the hold, as UET's SVC_TIME makes it. A trigger without a timestamp
// leaves the field free: it carries the hold alone, which the requester
// subtracts from the RTT it times itself (docs/spec-gaps.md row 34).
func (c *ctrlPkt) holdStamp(now mtime.Time) uint16 {
	if !c.timed {
		return timestamp(now) - timestamp(c.at)
	}
	return c.ts + timestamp(now) - timestamp(c.at)
}

// writeCtrl encodes control packet c on EV slot into buf.
func (q *QP) writeCtrl(now mtime.Time, c *ctrlPkt, slot evset.Slot, buf []byte, tx *verbs.Transmit) {
	if c.kind == verbs.KindSACK {
		q.writeSACK(now, c, slot, buf, tx)
		return
	}
	e := q.ep
	pk := e.txPacket()
	q.address(pk, slot, e.cfg.DSCP.Control, wire.NotECT)
	pk.PayloadLen = 0
	if c.aeth != 0 {
		pk.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpAck, DestQP: q.remoteQPN, PSN: uint32(c.psn)}
		pk.AETH = wire.AETH{Syndrome: c.aeth, MSN: uint32(c.seq)}
		q.stats.ProtNAKsSent++
	} else {
		pk.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpNACK, DestQP: q.remoteQPN, PSN: uint32(c.psn)}
		pk.NACK = wire.NACK{Reason: c.reason, CE: c.m == wire.SackSkipOnce, Entropy: wire.EV(c.ev), NackPSN: uint32(c.psn), CCType: wire.NACKDefaultCCType, TxTimestamp: c.ts}
		q.stats.NACKsSent++
	}
	n := len(wire.AppendPacket(buf[:0], pk, nil))
	e.describe(tx, q.evs.Plane(slot), n, n, q.qpn, c.kind)
}

// writeSACK encodes the SACK c into buf, on slot's EV, and describes it
// in tx. Its headers come from the endpoint's template, as a data
// packet's do (writeData).
func (q *QP) writeSACK(now mtime.Time, c *ctrlPkt, slot evset.Slot, buf []byte, tx *verbs.Transmit) {
	e := q.ep
	plane, ev := q.evs.Plane(slot), wire.EV(q.evs.Value(slot))
	f := &e.scratch.data
	f.Src, f.Dst = e.ports[plane].addr, q.remote[plane]
	if q.paths != nil && e.cfg.Encap != EncapPlain {
		f.Via = q.paths(plane, ev)
	}
	f.TrafficClass, f.EV = e.cfg.DSCP.Control<<2|uint8(wire.NotECT), ev
	f.DestQP, f.PSN = q.remoteQPN, uint32(c.psn)
	// In place, field by field (see Endpoint.address).
	sk := &e.scratch.tx.SACK
	*sk = wire.SACK{}
	sk.M, sk.PR, sk.Rtx, sk.AckPSNOffset, sk.Entropy = c.m, c.probe, c.rtx, c.ackOff, wire.EV(c.ev)
	sk.CackPSN, sk.MPR = uint32(c.psn), uint8(q.rx.win.Size()/128)
	sk.SackOffset, sk.SackBitmap = c.sackOff, c.bitmap
	sk.CC.TxTimestamp, sk.CC.OOOCount, sk.CC.RC = c.holdStamp(now), c.ooo, c.restore
	sk.CC.RcvCwndPen, sk.CC.RcvdBytes = c.pen, c.rcvd&(1<<24-1)
	n := len(e.dataTpl.AppendSACK(buf[:0], f, sk))
	q.stats.SACKsSent++
	a := q.rx.acks
	a.sackSlots[c.seq%uint16(len(a.sackSlots))] = sentSACK{seq: c.seq, slot1: slot + 1}
	if t := e.cfg.Tracer; t != nil {
		e.trace(t, trace.Record{Time: now, Kind: trace.SACKSent, QPN: q.qpn, PSN: uint32(c.psn), EV: ev, Plane: plane})
	}
	tx.Port, tx.Len, tx.WireLen, tx.QPN, tx.Kind = plane, n, n, q.qpn, verbs.KindSACK
	tx.Dst, tx.EV, tx.TrafficClass = f.Dst, f.EV, f.TrafficClass
}
