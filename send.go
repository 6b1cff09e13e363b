package mrc

import (
	"math/bits"
	"time"

	"github.com/openmrc/mrc/cc"
	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// The requester: segmentation of posted WRITEs into PSNs, the sent-packet
// records, SACK/NACK processing, the per-packet loss timer, selective
// retransmission and the timeout/retry backstop (digest §3.6–3.7).

// Packet record states.
const (
	pktFree     uint8 = iota
	pktInFlight       // sent, no news yet
	pktLost           // NACKed or timed out; queued for retransmission
	pktAcked          // acknowledged (in a bitmap, or cumulatively)
	pktHeld           // timed out on a suspect EV: neither in flight nor queued (suspect)
)

// noPSN ends the loss list; it is not a 24-bit value.
const noPSN psn.PSN = 1 << 31

// txPkt is what the requester remembers of one PSN in flight.
type txPkt struct {
	sentAt     mtime.Time
	wqe        uint32     // low bits of the WQE's sequence number
	seg        uint32     // packet index within the message
	size       uint32     // payload bytes
	prev, next psn.PSN    // loss list: in flight, oldest transmission first
	slot       evset.Slot // EV of the latest transmission
	rtx        uint8      // retransmissions so far (saturating)
	state      uint8
	nak        uint8 // what a RoCE NAK said of it: nakNone, nakAccused, nakConfirming
}

// What RoCE NAKs said of a PSN (onAETH).
const (
	nakNone       uint8 = iota
	nakAccused          // NAKed once; its retransmission is queued
	nakConfirming       // NAKed, and retransmitted since: a NAK now is confirmed
)

// wqe is a posted WRITE.
type wqe struct {
	id       uint64
	src      []byte // payload source; nil for a phantom region
	remoteVA uint64
	rkey     uint32
	length   uint64
	npkts    uint32
	first    psn.PSN
	msn      uint16
	rqmsn    uint16
	imm      uint32
	withImm  bool
}

type sender struct {
	una, nxt  psn.PSN // oldest unacknowledged PSN, next new PSN
	postPSN   psn.PSN // first PSN of the next posted WRITE
	window    int     // PSNs the peer tracks: its SACKs' MPR×128, at most maxWindow
	maxWindow int     // the configured MPR×128 PSNs
	ring      []txPkt // records of [una, nxt), at psn&mask; grows on demand
	mask      int
	lossHead  psn.PSN
	lossTail  psn.PSN
	rtxq      fifo.Queue[psn.PSN] // PSNs awaiting retransmission
	inflight  int                 // payload bytes in flight

	wqes    []wqe  // ring by sequence number; grows up to sqDepth
	sqDepth int    // most WRITEs posted and not completed
	wqeHead uint64 // oldest uncompleted
	wqeSend uint64 // next to send new packets from
	wqeTail uint64 // next to post
	seg     uint32 // next packet of wqes[wqeSend]
	msn     uint16
	rqmsn   uint16
	maxWimm int
	wimm    int // WRITE_IMMs started and not completed

	srtt, rttvar time.Duration

	timeout      time.Duration // QP local ACK timeout
	retryLinear  int
	retryExp     int
	retries      int
	lastProgress mtime.Time

	probeID uint16
	noTrim  bool // data goes out with DSCP.NoTrim (RTSAttr.NoTrim)
	// confirm says a lost packet's EV is probed itself before it is
	// retired (RTSAttr.NoTrimNACKs, or NoTrim).
	confirm bool

	// Back-off after resource NACKs (onResourceNACK): no retransmission
	// before rtxHold; backoffs counts such NACKs since the last progress.
	rtxHold  mtime.Time
	backoffs int

	suspects []suspect // at most one per EV; allocated at the first loss timeout
}

// suspect is an EV whose packet psn timed out (digest §3.7: probes
// "refresh ack state when SACKs may have been lost"). Rather than retire
// it at once, the requester rests it and holds its timed-out packets while
// reliability probes on other EVs name psn; the answer says whether psn
// arrived (docs/spec-gaps.md row 36). One probe is outstanding per suspect
// at a time.
type suspect struct {
	slot     evset.Slot
	psn      psn.PSN
	tries    int
	awaiting bool       // a probe is out
	at       mtime.Time // the answer's deadline when awaiting, else when the next probe is due
	used     bool
	// self says the packet is known lost and resent, and the probes now
	// travel the suspect EV itself, to tell congestion from a dead path
	// (sender.confirm).
	self bool
}

const (
	// suspectTries is how many probes in a row may go unanswered before
	// the suspect is retired anyway. A probe travels another EV, so a dead
	// suspect is known from the first answer; only lost answers repeat
	// it: with 30% of SACKs lost, twelve in a row happen 5e-7 of the
	// time.
	suspectTries = 12
	// selfProbeTries is how many probes of a suspect EV itself go
	// unanswered before it is retired (sender.confirm): a dead path loses
	// them all, a live one with 30% of its answers lost keeps its EV
	// 97% of the time.
	selfProbeTries = 3
)

func (s *sender) init(now mtime.Time, a RTSAttr) {
	*s = sender{
		una:          psn.PSN(a.SendPSN),
		nxt:          psn.PSN(a.SendPSN),
		postPSN:      psn.PSN(a.SendPSN),
		window:       a.MPR * wire.MPRUnit,
		maxWindow:    a.MPR * wire.MPRUnit,
		lossHead:     noPSN,
		lossTail:     noPSN,
		wqes:         make([]wqe, 4),
		sqDepth:      a.SQDepth,
		maxWimm:      a.MaxWimm,
		timeout:      time.Duration(1024<<a.TimeoutExp) * time.Nanosecond,
		retryLinear:  a.RetryLinear,
		retryExp:     a.RetryExp,
		lastProgress: now,
		noTrim:       a.NoTrim,
		confirm:      a.NoTrim || a.NoTrimNACKs,
	}
}

// grow resizes the record ring to hold at least n PSNs.
func (s *sender) grow(n int) {
	size := max(len(s.ring), 1)
	for size < n {
		size <<= 1
	}
	if size == len(s.ring) {
		return
	}
	ring := make([]txPkt, size)
	for p := s.una; p != s.nxt; p = p.Add(1) {
		ring[int(p)&(size-1)] = s.ring[int(p)&s.mask]
	}
	s.ring, s.mask = ring, size-1
}

func (s *sender) rec(p psn.PSN) *txPkt { return &s.ring[int(p)&s.mask] }

// post queues a WRITE.
func (s *sender) post(q *QP, wr verbs.WriteRequest, src []byte) error {
	if n := s.wqeTail - s.wqeHead; n == uint64(len(s.wqes)) {
		if n >= uint64(s.sqDepth) {
			return verbs.ErrQueueFull
		}
		s.growWQEs()
	}
	mtu := uint64(q.ep.cfg.MTU)
	npkts := max(1, (wr.Length+mtu-1)/mtu)
	if s.wqeHead == s.wqeTail {
		s.lastProgress = q.now
		q.timerDirty = true // the backstop starts
	}
	w := &s.wqes[s.wqeTail&uint64(len(s.wqes)-1)]
	*w = wqe{
		id:       wr.ID,
		src:      src,
		remoteVA: wr.Remote.Addr + wr.RemoteOffset,
		rkey:     wr.Remote.Key,
		length:   wr.Length,
		npkts:    uint32(npkts),
		first:    s.postPSN,
		msn:      s.msn,
		imm:      wr.Imm,
		withImm:  wr.WithImm,
	}
	if wr.WithImm {
		w.rqmsn = s.rqmsn
		s.rqmsn++
	}
	s.msn++
	s.postPSN = s.postPSN.Add(int(npkts))
	s.wqeTail++
	return nil
}

func (s *sender) wqe(seq uint64) *wqe { return &s.wqes[seq&uint64(len(s.wqes)-1)] }

// growWQEs doubles the WQE ring. Most QPs keep a few WRITEs posted, so the
// ring starts small: a simulation holds hundreds of thousands of QPs.
func (s *sender) growWQEs() {
	wqes := make([]wqe, 2*len(s.wqes))
	for seq := s.wqeHead; seq != s.wqeTail; seq++ {
		wqes[seq&uint64(len(wqes)-1)] = *s.wqe(seq)
	}
	s.wqes = wqes
}

// segSize returns the payload of packet seg of w.
func segSize(w *wqe, seg uint32, mtu int) uint32 {
	off := uint64(seg) * uint64(mtu)
	return uint32(min(uint64(mtu), w.length-off))
}

// fits reports whether a packet of size bytes fits the congestion window.
// One packet may always be in flight, so the window cannot deadlock.
func (s *sender) fits(q *QP, size uint32) bool {
	return s.inflight == 0 || s.inflight+int(size) <= q.cc.Window()
}

// newReady reports whether a new packet could go out now, ports aside.
func (s *sender) newReady(q *QP) bool {
	if s.wqeSend == s.wqeTail || s.nxt.Sub(s.una) >= s.window {
		return false
	}
	w := s.wqe(s.wqeSend)
	if s.seg == 0 && w.withImm && s.wimm >= s.maxWimm {
		return false
	}
	return s.fits(q, segSize(w, s.seg, q.ep.cfg.MTU))
}

// rtxReady reports whether a retransmission could go out at now, ports
// aside.
func (s *sender) rtxReady(q *QP, now mtime.Time) bool {
	if now < s.rtxHold {
		return false
	}
	// PSNs beyond the peer's window (after PSN_OOR_WINDOW) wait at the
	// back of the queue until the window reaches them; each is looked
	// at once per call.
	for skipped := 0; skipped < s.rtxq.Len(); {
		p, _ := s.rtxq.Peek()
		switch {
		case !p.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(p).state != pktLost:
			s.rtxq.Pop() // acknowledged since it was queued
		case p.Sub(s.una) >= s.window:
			s.rtxq.Pop()
			s.rtxq.Push(p)
			skipped++
		default:
			return s.fits(q, s.rec(p).size)
		}
	}
	return false
}

// sendNew writes the next new data packet on EV slot.
func (s *sender) sendNew(q *QP, now mtime.Time, slot evset.Slot, buf []byte) verbs.Transmit {
	if s.nxt.Sub(s.una) >= len(s.ring) {
		s.grow(max(s.nxt.Sub(s.una)+1, 16))
	}
	p := s.nxt
	w := s.wqe(s.wqeSend)
	size := segSize(w, s.seg, q.ep.cfg.MTU)
	*s.rec(p) = txPkt{sentAt: now, wqe: uint32(s.wqeSend), seg: s.seg, size: size, slot: slot, state: pktInFlight}
	if s.linkLoss(p) {
		q.timerDirty = true
	}
	s.inflight += int(size)
	s.nxt = s.nxt.Add(1)
	if s.seg == 0 && w.withImm {
		s.wimm++
	}
	if s.seg++; s.seg == w.npkts {
		s.wqeSend++
		s.seg = 0
	}
	q.stats.DataSent++
	q.stats.PayloadSent += uint64(size)
	q.cc.OnSent(now, int(size), false)
	q.tracePacket(now, trace.PacketSent, p, slot, size, "")
	return q.writeData(now, buf, p, false)
}

// sendRetransmit writes the oldest queued retransmission on EV slot.
func (s *sender) sendRetransmit(q *QP, now mtime.Time, slot evset.Slot, buf []byte) verbs.Transmit {
	p, _ := s.rtxq.Pop()
	r := s.rec(p)
	r.sentAt, r.slot, r.state = now, slot, pktInFlight
	if r.nak == nakAccused {
		r.nak = nakConfirming
	}
	if r.rtx < 255 {
		r.rtx++
	}
	if s.linkLoss(p) {
		q.timerDirty = true
	}
	s.inflight += int(r.size)
	q.stats.Retransmits++
	q.cc.OnSent(now, int(r.size), true)
	q.tracePacket(now, trace.PacketRetransmitted, p, slot, r.size, "")
	return q.writeData(now, buf, p, true)
}

// pickRetransmitEV chooses an EV for a retransmission, avoiding the EV that
// lost the packet when another is available (digest §3.5).
func (q *QP) pickRetransmitEV(now mtime.Time, mask uint32) (evset.Slot, bool) {
	head, _ := q.tx.rtxq.Peek()
	old := q.tx.rec(head).slot
	slot, ok := q.evs.Pick(now, mask, q.ep.rng)
	if ok && slot == old {
		if again, ok2 := q.evs.Pick(now, mask, q.ep.rng); ok2 {
			slot = again
		}
	}
	return slot, ok
}

// writeData encodes the data packet of PSN p into buf.
func (q *QP) writeData(now mtime.Time, buf []byte, p psn.PSN, rtx bool) verbs.Transmit {
	e, s := q.ep, &q.tx
	r := s.rec(p)
	w := s.wqe(uint64(r.wqe))
	first, last := r.seg == 0, r.seg+1 == w.npkts
	var op wire.Opcode
	switch {
	case first && last && w.withImm:
		op = wire.OpWriteOnlyImm
	case first && last:
		op = wire.OpWriteOnly
	case first:
		op = wire.OpWriteFirst
	case last && w.withImm:
		op = wire.OpWriteLastImm
	case last:
		op = wire.OpWriteLast
	default:
		op = wire.OpWriteMiddle
	}
	dscp := e.cfg.DSCP.Data
	switch {
	case s.noTrim:
		dscp = e.cfg.DSCP.NoTrim
	case rtx:
		dscp = e.cfg.DSCP.DataRetx
	}
	pk := &e.tx
	q.address(pk, r.slot, dscp, wire.ECT0)
	off := uint64(r.seg) * uint64(e.cfg.MTU)
	// Ask for an immediate SACK when this packet ends what we can send
	// for now, so that the tail is not left to the SACK timer (UET
	// AckRequest).
	ackReq := rtx || last && s.wqeSend == s.wqeTail ||
		q.cc.Window()-s.inflight < e.cfg.MTU
	pk.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: op, DestQP: q.remoteQPN, AckReq: ackReq, Rtx: rtx, TS: e.cfg.Timestamps, PSN: uint32(p)}
	pk.METH = wire.METH{MSN: w.msn, RQMSN: w.rqmsn}
	if e.cfg.Timestamps {
		pk.TSETH = wire.TSETH{TxTimestamp: timestamp(now), FType: wire.TSETHFType}
	}
	pk.RETH = wire.RETH{VA: w.remoteVA + off, RKey: w.rkey, DMALen: uint32(w.length)}
	pk.Imm = wire.ImmDt(w.imm)
	pk.PayloadLen = int(r.size)
	var payload []byte
	if w.src != nil {
		payload = w.src[off : off+uint64(r.size)]
	}
	n := len(wire.AppendPacket(buf[:0], pk, payload))
	kind := verbs.KindData
	if rtx {
		kind = verbs.KindRetransmit
	}
	return verbs.Transmit{Port: q.evs.Plane(r.slot), Len: n, WireLen: pk.Len(), QPN: q.qpn, Kind: kind}.Addressed(pk.Final(), &pk.IP, &pk.UDP)
}

// timestamp is a 16-bit TSETH time in units of 128 ns (digest §3.2).
func timestamp(now mtime.Time) uint16 { return uint16(now >> 7) }

// linkLoss appends p to the loss list (it was just transmitted). It
// reports whether the list was empty, so that the loss timer must be armed.
func (s *sender) linkLoss(p psn.PSN) (first bool) {
	r := s.rec(p)
	r.prev, r.next = s.lossTail, noPSN
	if s.lossTail == noPSN {
		s.lossHead = p
		first = true
	} else {
		s.rec(s.lossTail).next = p
	}
	s.lossTail = p
	return first
}

func (s *sender) unlinkLoss(p psn.PSN) {
	r := s.rec(p)
	if r.prev == noPSN {
		s.lossHead = r.next
	} else {
		s.rec(r.prev).next = r.next
	}
	if r.next == noPSN {
		s.lossTail = r.prev
	} else {
		s.rec(r.next).prev = r.prev
	}
	r.prev, r.next = noPSN, noPSN
}

// acknowledge marks p acknowledged and returns its newly acked bytes.
func (s *sender) acknowledge(q *QP, now mtime.Time, p psn.PSN) int {
	r := s.rec(p)
	switch r.state {
	case pktInFlight:
		s.unlinkLoss(p)
		s.inflight -= int(r.size)
	case pktLost:
		if r.rtx == 0 {
			q.stats.SpuriousRetrans++ // declared lost, yet the original arrived
		}
	case pktHeld:
	default:
		return 0
	}
	r.state = pktAcked
	q.tracePacket(now, trace.PacketAcked, p, r.slot, r.size, "")
	return int(r.size)
}

// onSACK processes a reliability SACK (digest §3.6).
func (s *sender) onSACK(q *QP, now mtime.Time, port int, sk *wire.SACK) {
	q.stats.SACKsReceived++
	cack := psn.PSN(sk.CackPSN)
	if why := s.checkSACK(q, sk); why != dropNone {
		q.ep.drop(now, &q.stats, q.qpn, why)
		return
	}
	inFlight := func(p psn.PSN) bool { return p.InWindow(s.una, s.nxt.Sub(s.una)) }

	// RTT from the packet that triggered the SACK, if sent only once (a
	// probe's answer names a PSN the probe did not carry: no sample).
	var rtt time.Duration
	if q.ep.cfg.Timestamps {
		rtt = time.Duration(uint16(timestamp(now)-sk.CC.TxTimestamp)) << 7
	} else if trig := cack.Add(int(sk.AckPSNOffset)); inFlight(trig) && !sk.PR {
		if r := s.rec(trig); r.state == pktInFlight && r.rtx == 0 {
			// Without timestamps the field carries the responder's
			// hold (holdStamp); a peer that leaves it zero holds nothing.
			rtt = now.Sub(r.sentAt) - time.Duration(sk.CC.TxTimestamp)<<7
		}
	}
	if rtt > 0 {
		s.sampleRTT(rtt)
	}

	newly := 0
	for inFlight(s.una) && !cack.Less(s.una) {
		newly += s.acknowledge(q, now, s.una)
		s.una = s.una.Add(1)
	}
	base := cack.Add(int(sk.SackOffset))
	for bm := sk.SackBitmap; bm != 0; {
		i := bits.TrailingZeros64(bm)
		bm &= bm - 1
		if p := base.Add(i); inFlight(p) {
			newly += s.acknowledge(q, now, p)
		}
	}
	for inFlight(s.una) && s.rec(s.una).state == pktAcked {
		s.una = s.una.Add(1)
	}

	if sk.MPR > 0 {
		// Never send beyond the window the peer advertises (digest
		// §3.3, Dynamic MPR).
		s.window = min(s.maxWindow, int(sk.MPR)*wire.MPRUnit)
	}
	s.resolveSuspects(q, now, sk)
	q.pathFeedback(now, sk)
	cwnd := q.cc.Window()
	q.cc.OnAck(now, cc.Ack{
		NewlyAcked:  newly,
		Inflight:    s.inflight,
		RTT:         rtt,
		ECN:         sk.M == wire.SackSkipOnce && !sk.PR,
		RcvCwndPen:  sk.CC.RcvCwndPen,
		RestoreCwnd: sk.CC.RC,
	})
	q.traceCwnd(now, cwnd)
	if newly > 0 {
		s.retries, s.backoffs = 0, 0
		s.lastProgress = now
		s.complete(q, now)
	}
	q.ep.markReady(q)
}

// checkSACK returns why sk cannot be a SACK of our peer's, or dropNone
// (docs/security.md). A SACK may acknowledge only PSNs sent: its
// cumulative point, its trigger and every bit of its bitmap lie before
// the next new PSN. The EV it reflects must be one of the QP's.
func (s *sender) checkSACK(q *QP, sk *wire.SACK) verbs.DropReason {
	if _, ok := q.slotOf(uint32(sk.Entropy)); !ok {
		return verbs.DropBadEV
	}
	cack := psn.PSN(sk.CackPSN)
	if !cack.Less(s.nxt) {
		return verbs.DropStale
	}
	if trig := cack.Add(int(sk.AckPSNOffset)); !sk.PR && !trig.Less(s.nxt) {
		return verbs.DropStale
	}
	if bm := sk.SackBitmap; bm != 0 {
		last := cack.Add(int(sk.SackOffset) + 63 - bits.LeadingZeros64(bm))
		if !last.Less(s.nxt) {
			return verbs.DropStale
		}
	}
	return dropNone
}

// credibleNACK reports whether a fatal NACK may end the QP: it names a
// PSN sent and not yet acknowledged, reflects one of the QP's EVs, and
// arrived on a plane the QP uses (its source address was checked in
// handle). A fatal NACK failing this is a forgery or a stray: one packet
// must not be able to end a connection.
func (s *sender) credibleNACK(q *QP, port int, nk *wire.NACK) bool {
	p := psn.PSN(nk.NackPSN)
	if !p.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(p).state == pktAcked {
		return false
	}
	_, ok := q.slotOf(uint32(nk.Entropy))
	return ok && q.evs.PlaneUp(port)
}

// pathFeedback applies what a SACK says about the EV it reflects (digest
// §3.5): an answered probe, an ECN mark, or ALWAYS_SKIP.
func (q *QP) pathFeedback(now mtime.Time, sk *wire.SACK) {
	slot, ok := q.slotOf(uint32(sk.Entropy))
	if !ok {
		return
	}
	ecn := sk.M == wire.SackSkipOnce
	if ecn {
		q.stats.ECNEchoes++
	}
	switch {
	case sk.PR:
		q.evs.OnProbeResponse(now, slot, ecn)
	case q.evp.Oblivious:
	case ecn:
		q.evs.OnSkip(now, slot, evset.ReasonECN)
	case sk.M == wire.SackAlwaysSkip:
		q.evs.OnBad(now, slot, evset.ReasonAlwaysSkip)
	}
}

// sampleRTT folds one RTT sample into the smoothed estimate (RFC 6298).
func (s *sender) sampleRTT(rtt time.Duration) {
	if s.srtt == 0 {
		s.srtt, s.rttvar = rtt, rtt/2
		return
	}
	d := s.srtt - rtt
	if d < 0 {
		d = -d
	}
	s.rttvar += (d - s.rttvar) / 4
	s.srtt += (rtt - s.srtt) / 8
}

// complete delivers requester completions for every WRITE whose last PSN is
// now acknowledged, in post order.
func (s *sender) complete(q *QP, now mtime.Time) {
	for s.wqeHead != s.wqeSend || s.wqeHead != s.wqeTail && s.seg > 0 {
		w := s.wqe(s.wqeHead)
		if s.una.Sub(w.first) < int(w.npkts) {
			return
		}
		if w.withImm {
			s.wimm--
		}
		q.stats.WritesDone++
		q.ep.emit(verbs.Event{Kind: verbs.EventWriteDone, Time: now, QPN: q.qpn, WRID: w.id, Bytes: w.length})
		*w = wqe{}
		s.wqeHead++
	}
}

// onNACK processes a reliability NACK (digest §3.5).
func (s *sender) onNACK(q *QP, now mtime.Time, port int, nk *wire.NACK) {
	q.stats.NACKsReceived++
	p := psn.PSN(nk.NackPSN)
	switch nk.Reason {
	case wire.NackUnexpEvent, wire.NackWImmLimit:
		if !s.credibleNACK(q, port, nk) {
			q.ep.drop(now, &q.stats, q.qpn, verbs.DropFatalNACK)
			return
		}
		q.fail(now, verbs.ErrRemoteFatal)
		return
	}
	if _, ok := q.slotOf(uint32(nk.Entropy)); !ok {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropBadEV)
		return
	}
	if !p.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(p).state != pktInFlight {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropStale)
		return
	}
	r := s.rec(p)
	s.requeue(p)
	q.tracePacket(now, trace.PacketNacked, p, r.slot, r.size, nk.Reason.String())
	cwnd := q.cc.Window()
	defer q.traceCwnd(now, cwnd)
	switch nk.Reason {
	case wire.NackTrimmed, wire.NackTrimmedLastHop:
		// A mid-fabric trim skips the EV; a last-hop trim does not
		// (the path is fine: incast), unless the packet was also
		// CE-marked on the way (digest §3.5).
		lastHop := nk.Reason == wire.NackTrimmedLastHop
		if lastHop {
			q.stats.LastHopNACKs++
		} else {
			q.stats.TrimNACKs++
		}
		switch {
		case q.evp.Oblivious:
		case !lastHop:
			q.evs.OnSkip(now, r.slot, evset.ReasonTrim)
		case nk.CE:
			q.evs.OnSkip(now, r.slot, evset.ReasonECN)
		}
		q.cc.OnNack(now, cc.Nack{Bytes: int(r.size), Inflight: s.inflight, LastHop: lastHop})
	default:
		s.onResourceNACK(q, now, p, nk.Reason)
	}
	q.ep.markReady(q)
}

// onResourceNACK backs off after a NACK saying the responder could not
// take PSN p (NO_BITMAP, NO_PKT_BUFFER, NO_RESOURCE, PSN_OOR_WINDOW;
// docs/spec-gaps.md row 16). The path is not to blame. p
// is already queued for retransmission, but nothing is resent before one
// RTT has passed, doubling with each such NACK until progress resumes;
// the congestion window shrinks as for a loss. PSN_OOR_WINDOW also says
// the peer's window ends before p: every PSN from p on that is still in
// flight is taken out of flight too (the responder answers only a few
// per RTT, and the rest must not time out and blame their EVs), and the
// window shrinks until the peer's next SACK advertises its MPR.
func (s *sender) onResourceNACK(q *QP, now mtime.Time, p psn.PSN, why wire.NackReason) {
	q.cc.OnLoss(now, int(s.rec(p).size))
	if why == wire.NackPSNOORWindow {
		beyond := p.Sub(s.una)
		for l := s.lossHead; l != noPSN; {
			next := s.rec(l).next
			if l.Sub(s.una) > beyond {
				s.requeue(l)
			}
			l = next
		}
		s.window = max(wire.MPRUnit, min(s.window, beyond))
	}
	hold := max(q.ep.cfg.BaseRTT, s.srtt) << min(s.backoffs, 6)
	s.backoffs++
	s.rtxHold = max(s.rtxHold, now.Add(hold))
	q.timerDirty = true
}

// nakError returns the error a RoCE NAK with AETH syndrome syn names, or
// nil for a syndrome that is not a NAK MRC acts on (an ACK, a PSN
// sequence error: MRC has no go-back-N).
func nakError(syn uint8) error {
	switch syn {
	case wire.AETHNakRemoteAccess:
		return verbs.ErrRemoteAccess
	case wire.AETHNakInvalidRequest:
		return verbs.ErrRemoteInvalid
	case wire.AETHNakRemoteOperation:
		return verbs.ErrRemoteFatal
	}
	return nil
}

// onAETH processes a RoCE NAK: the responder refused PSN p's memory
// access (docs/spec-gaps.md, "Protection errors"). No path is to blame
// and the congestion window is untouched. Like a fatal NACK, the NAK must
// be credible: it names a PSN sent and not acknowledged and arrived on a
// plane the QP uses from the peer's address (checked in handle). And
// since an on-path forger can make the responder NAK a packet it forged,
// one NAK only queues p for retransmission: the QP fails when a NAK comes
// back for p after that retransmission went out, about one RTT plus the
// responder's NAK interval after the first, well before a loss timer
// could blame an EV. A forged packet whose PSN the real one then fills
// is not NAKed again (the responder NAKs only PSNs it has not received).
func (s *sender) onAETH(q *QP, now mtime.Time, port int, p psn.PSN, syn uint8) {
	if !p.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(p).state == pktAcked || !q.evs.PlaneUp(port) {
		q.ep.drop(now, &q.stats, q.qpn, verbs.DropFatalNACK)
		return
	}
	r := s.rec(p)
	switch r.nak {
	case nakNone:
		q.stats.ProtNAKsRecv++
		r.nak = nakAccused
		if r.state == pktInFlight {
			s.requeue(p)
		}
		q.ep.markReady(q)
	case nakConfirming:
		q.stats.ProtNAKsRecv++
		q.fail(now, nakError(syn))
	}
}

// requeue takes p out of flight and queues it for retransmission.
func (s *sender) requeue(p psn.PSN) {
	r := s.rec(p)
	s.unlinkLoss(p)
	s.inflight -= int(r.size)
	r.state = pktLost
	s.rtxq.Push(p)
}

// deadline returns the requester's next deadline: the loss timer of the
// oldest packet in flight, or the retry backstop while work is pending.
func (s *sender) deadline(q *QP) mtime.Time {
	t := mtime.Never
	if s.lossHead != noPSN {
		t = s.rec(s.lossHead).sentAt.Add(q.lossTimeout())
	}
	if s.wqeHead != s.wqeTail {
		t = mtime.Min(t, s.lastProgress.Add(s.retryInterval()))
	}
	if s.rtxHold > q.now && s.rtxq.Len() > 0 {
		t = mtime.Min(t, s.rtxHold)
	}
	for i := range s.suspects {
		if sp := &s.suspects[i]; sp.used && sp.awaiting {
			t = mtime.Min(t, sp.at)
		}
	}
	return t
}

// retryInterval is the backstop timeout for the current retry: fixed for
// the linear retries, then doubling.
func (s *sender) retryInterval() time.Duration {
	if s.retries < s.retryLinear {
		return s.timeout
	}
	return s.timeout << min(s.retries-s.retryLinear+1, 16)
}

// onTimer declares lost every packet whose loss timer expired, retiring its
// EV (digest §3.5: an untrimmed loss means the path failed), and runs the
// retry backstop.
func (s *sender) onTimer(q *QP, now mtime.Time) {
	to := q.lossTimeout()
	for s.lossHead != noPSN {
		p := s.lossHead
		r := s.rec(p)
		if r.sentAt.Add(to) > now {
			break
		}
		q.stats.LossTimeouts++
		if s.holdSuspect(q, now, p) {
			continue
		}
		s.requeue(p)
		q.tracePacket(now, trace.PacketLost, p, r.slot, r.size, "")
		cwnd := q.cc.Window()
		if !q.evp.Oblivious && q.evs.PlaneUp(q.evs.Plane(r.slot)) {
			q.retirePath(now, r.slot)
		}
		q.cc.OnLoss(now, int(r.size))
		q.traceCwnd(now, cwnd)
	}
	s.expireSuspects(q, now)
	if s.wqeHead != s.wqeTail && now >= s.lastProgress.Add(s.retryInterval()) {
		s.retries++
		q.stats.RetryTimeouts++
		if s.retryExp != RetryForever && s.retries > s.retryLinear+s.retryExp {
			q.fail(now, verbs.ErrNoPath)
			return
		}
		s.lastProgress = now
	}
}

// planeDown takes every packet in flight on plane out of flight for
// retransmission elsewhere, without blaming its EV: the port is down.
func (s *sender) planeDown(q *QP, plane int) {
	for i := range s.suspects {
		if sp := &s.suspects[i]; sp.used && q.evs.Plane(sp.slot) == plane {
			s.release(q, q.now, i, false)
		}
	}
	for p := s.lossHead; p != noPSN; {
		r := s.rec(p)
		next := r.next
		if q.evs.Plane(r.slot) == plane {
			s.requeue(p)
		}
		p = next
	}
}

// flush completes every posted WRITE with ErrFlushed.
func (s *sender) flush(q *QP, now mtime.Time) {
	if len(s.wqes) == 0 {
		return
	}
	for ; s.wqeHead != s.wqeTail; s.wqeHead++ {
		w := s.wqe(s.wqeHead)
		q.ep.emit(verbs.Event{Kind: verbs.EventWriteDone, Time: now, QPN: q.qpn, WRID: w.id, Bytes: w.length, Err: verbs.ErrFlushed})
		*w = wqe{}
	}
	s.wqeSend, s.seg = s.wqeTail, 0
	s.lossHead, s.lossTail, s.inflight = noPSN, noPSN, 0
	s.rtxq.Clear()
	clear(s.suspects)
}

// traceCwnd traces the congestion window if it changed from before.
func (q *QP) traceCwnd(now mtime.Time, before int) {
	if t := q.ep.cfg.Tracer; t != nil {
		if w := q.cc.Window(); w != before {
			t.Trace(&trace.Record{Time: now, Kind: trace.CwndChanged, QPN: q.qpn, Cwnd: w, Inflight: q.tx.inflight})
		}
	}
}

// holdSuspect holds p, whose loss timer expired, if its EV is or can
// become a suspect, and reports whether it did. Oblivious spraying, a
// plane that is down and an EV already out of service take the old way:
// resend and retire.
func (s *sender) holdSuspect(q *QP, now mtime.Time, p psn.PSN) bool {
	r := s.rec(p)
	if q.evp.Oblivious || !q.evs.PlaneUp(q.evs.Plane(r.slot)) {
		return false
	}
	i := s.suspectOf(r.slot)
	if i < 0 {
		if !q.evs.Suspect(now, r.slot) {
			return false
		}
		i = s.freeSuspect()
		s.suspects[i] = suspect{slot: r.slot, psn: p, at: now, used: true}
		q.ep.markReady(q)
	}
	s.unlinkLoss(p)
	s.inflight -= int(r.size)
	r.state = pktHeld
	return true
}

func (s *sender) suspectOf(slot evset.Slot) int {
	for i := range s.suspects {
		if sp := &s.suspects[i]; sp.used && sp.slot == slot {
			return i
		}
	}
	return -1
}

// freeSuspect returns an unused entry of the suspect table, growing it
// when there is none (a QP has fewer suspects than EVs).
func (s *sender) freeSuspect() int {
	for i := range s.suspects {
		if !s.suspects[i].used {
			return i
		}
	}
	s.suspects = append(s.suspects, suspect{})
	return len(s.suspects) - 1
}

// suspectDue returns a suspect whose next probe is due at now.
func (s *sender) suspectDue(now mtime.Time) (int, bool) {
	for i := range s.suspects {
		if sp := &s.suspects[i]; sp.used && !sp.awaiting && sp.at <= now {
			return i, true
		}
	}
	return 0, false
}

// sendSuspectProbe writes suspect i's probe on EV slot, another EV than
// the suspect's when one is usable: it names the held PSN.
func (s *sender) sendSuspectProbe(q *QP, now mtime.Time, i int, slot evset.Slot, buf []byte) verbs.Transmit {
	sp := &s.suspects[i]
	sp.awaiting, sp.at = true, now.Add(q.lossTimeout())
	sp.tries++
	return q.writeProbe(now, slot, sp.psn, buf)
}

// suspectProbeEV chooses the EV for suspect i's probe among the planes in
// mask: the suspect EV itself when it is being confirmed (self), else
// another usable EV.
func (s *sender) suspectProbeEV(q *QP, now mtime.Time, i int, mask uint32) (evset.Slot, bool) {
	if sp := &s.suspects[i]; sp.self {
		return sp.slot, mask&(1<<q.evs.Plane(sp.slot)) != 0
	}
	return q.evs.Pick(now, mask, q.ep.rng)
}

// resolveSuspects applies a SACK to the suspects: one whose held PSN it
// acknowledges was healthy (only its SACK was lost); one whose PSN a
// probe's answer names and does not acknowledge lost the packet. A
// suspect being confirmed (self) is healthy once any probe answer comes
// back over its EV.
func (s *sender) resolveSuspects(q *QP, now mtime.Time, sk *wire.SACK) {
	trig := psn.PSN(sk.CackPSN).Add(int(sk.AckPSNOffset))
	for i := range s.suspects {
		sp := &s.suspects[i]
		if !sp.used {
			continue
		}
		switch {
		case sp.self:
			if sk.PR && uint32(sk.Entropy) == q.evs.Value(sp.slot) {
				s.release(q, now, i, false)
			}
		case !sp.psn.InWindow(s.una, s.nxt.Sub(s.una)) || s.rec(sp.psn).state == pktAcked:
			s.release(q, now, i, false)
		case sk.PR && trig == sp.psn:
			s.release(q, now, i, true)
		}
	}
}

// expireSuspects fails every suspect probe whose answer is overdue: the
// next goes out at once, up to suspectTries, then the EV is retired.
func (s *sender) expireSuspects(q *QP, now mtime.Time) {
	for i := range s.suspects {
		sp := &s.suspects[i]
		if !sp.used || !sp.awaiting || sp.at > now {
			continue
		}
		sp.awaiting = false
		if sp.tries >= suspectTries || sp.self && sp.tries >= selfProbeTries {

			s.release(q, now, i, true)
			continue
		}
		q.ep.markReady(q)
	}
}

// release ends suspect i. A lost packet (lost) retires the EV, as an
// untrimmed loss does (digest §3.5), and shrinks the window; otherwise
// the EV is Good again. Either way its held packets not acknowledged are
// queued for retransmission.
func (s *sender) release(q *QP, now mtime.Time, i int, lost bool) {
	sp := s.suspects[i]
	confirm := lost && s.confirm && !sp.self
	if confirm {
		// Resend now, but keep the EV resting while it is probed itself.
		s.suspects[i] = suspect{slot: sp.slot, psn: sp.psn, at: now, used: true, self: true}
	} else {
		s.suspects[i] = suspect{}
		q.evs.Unsuspect(now, sp.slot)
	}
	if lost && !confirm {
		q.retirePath(now, sp.slot)
	}
	cwnd := q.cc.Window()
	for p := s.una; p != s.nxt; p = p.Add(1) {
		r := s.rec(p)
		if r.state != pktHeld || r.slot != sp.slot {
			continue
		}
		r.state = pktLost
		s.rtxq.Push(p)
		q.tracePacket(now, trace.PacketLost, p, r.slot, r.size, "")
		if lost {
			q.cc.OnLoss(now, int(r.size))
		}
	}
	q.traceCwnd(now, cwnd)
	q.ep.markReady(q)
}
