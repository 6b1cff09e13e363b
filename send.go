package mrc

import (
	"time"

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

// txPkt is what the requester remembers of one PSN in flight: 32 bytes,
// since a QP keeps one for every PSN of its window (TestTxPktSize).
type txPkt struct {
	sentAt     mtime.Time
	wqe        uint32     // low bits of the WQE's sequence number
	seg        uint32     // packet index within the message
	prev, next psn.PSN    // loss list: in flight, oldest transmission first
	size       uint16     // payload bytes (an MTU is at most 9000)
	slot       evset.Slot // EV of the latest transmission
	rtx        uint8      // retransmissions so far (saturating)
	state      uint8
	// marks holds what RoCE NAKs said of the PSN (nakMask: nakNone,
	// nakAccused, nakConfirming) and which earlier transmissions may
	// still reach the peer (echoMask: echoFirst, echoRtx; rttsample.go).
	marks uint8
	// echoAge is how long before sentAt the latest of those left, in
	// whole µs, saturating at 255: an age read short can only cost an RTT
	// sample, never take a wrong one (txPkt.answers).
	echoAge uint8
}

// What RoCE NAKs said of a PSN (onAETH), in txPkt.marks.
const (
	nakNone       uint8 = 0
	nakAccused    uint8 = 1 << 2 // NAKed once; its retransmission is queued
	nakConfirming uint8 = 2 << 2 // NAKed, and retransmitted since: a NAK now is confirmed
	nakMask             = 3 << 2
)

// wqe is a posted WRITE: 72 bytes.
type wqe struct {
	id       uint64
	src      []byte // payload source; nil for a phantom region
	remoteVA uint64
	length   uint64
	rkey     uint32
	npkts    uint32
	first    psn.PSN
	imm      uint32
	msn      uint16
	rqmsn    uint16
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

	timeout     time.Duration // QP local ACK timeout
	retryLinear int32
	retryExp    int32
	retries     int32
	// backoffs counts resource NACKs since the last progress (rtxHold).
	backoffs     int32
	lastProgress mtime.Time

	probeID uint16
	noTrim  bool // data goes out with DSCP.NoTrim (RTSAttr.NoTrim)
	// confirm says a lost packet's EV is probed itself before it is
	// retired (RTSAttr.NoTrimNACKs, or NoTrim).
	confirm bool
	// rtxFlagged says a SACK of the peer's has set the rtx flag, so its
	// clear flag means a first transmission (txPkt.answers).
	rtxFlagged bool

	// Back-off after resource NACKs (onResourceNACK): no retransmission
	// before rtxHold.
	rtxHold mtime.Time

	suspects []suspect // at most one per EV; allocated at the first loss timeout

	// lastHopTrimAt is when the latest TRIMMED_LASTHOP NACK arrived (0:
	// none yet; none arrives at time 0): a packet sent at or before it
	// whose loss timer expires is a congestion loss (congestionLoss).
	lastHopTrimAt mtime.Time
	// ackedSentAt is the latest send time of a packet acknowledged so
	// far: with trimAt, it tells a flight lost to full queues from one
	// lost on a failed path (congestionLoss).
	ackedSentAt mtime.Time
	// A window below one packet is a rate: the next packet leaves at
	// paceAt, set from the latest packet's send time and size (pace).
	paceAt, pacedAt mtime.Time
	pacedSize       uint16
	// paceJitter is the spacing's random factor for the latest packet,
	// in 1/paceJitterOne (0: not drawn yet).
	paceJitter uint16
	// trimAt is when the latest trim NACK of either kind arrived (0: none
	// yet): a packet sent at or before it met deep queues, and its loss
	// timer stretches to the fabric's queueing bound (lossTimeoutOf).
	trimAt mtime.Time

	planeLoss []planeStreak // by plane; allocated at the first path retired for loss
}

func (s *sender) init(now mtime.Time, a RTSAttr) {
	*s = sender{
		una:          psn.PSN(a.SendPSN),
		nxt:          psn.PSN(a.SendPSN),
		postPSN:      psn.PSN(a.SendPSN),
		window:       a.MPR * wire.MPRUnit,
		maxWindow:    a.MPR * wire.MPRUnit,
		lossHead:     noPSN,
		lossTail:     noPSN,
		sqDepth:      a.SQDepth,
		maxWimm:      a.MaxWimm,
		timeout:      time.Duration(1024<<a.TimeoutExp) * time.Nanosecond,
		retryLinear:  int32(a.RetryLinear),
		retryExp:     int32(a.RetryExp),
		lastProgress: now,
		noTrim:       a.NoTrim,
		confirm:      a.NoTrim || a.NoTrimNACKs,
	}
}

// ringHint returns how many PSNs the ring is likely to need soon: those
// posted, within the peer's window and the congestion window. Growing to
// that at once, rather than doubling up to it, spares the garbage of the
// smaller rings (on --preset big, 131,072 QPs send a 256-packet window
// from the start).
func (s *sender) ringHint(q *QP) int {
	return min(s.postPSN.Sub(s.una), s.window, q.ctl().Window()/q.ep.cfg.MTU+1)
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
// ring starts small, at the first WRITE: a simulation holds hundreds of
// thousands of QPs, half of which never post one.
func (s *sender) growWQEs() {
	wqes := make([]wqe, max(2*len(s.wqes), 4))
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
// One packet may always be in flight, so the window cannot deadlock; a
// window below the packet's size spaces packets (pace).
func (s *sender) fits(q *QP, size uint32) bool {
	if s.inflight == 0 {
		return q.now >= s.paceAt
	}
	return s.inflight+int(size) <= q.ctl().Window()
}

// pace notes a packet of size bytes sent at now and, when the window is
// below that size, when the next may leave: a window of w bytes is then a
// rate of w per base RTT, so the next packet waits size/w base RTTs on
// average (cc.Controller; docs/nscc.md, "Windows below one packet").
func (s *sender) pace(q *QP, now mtime.Time, size uint16) {
	s.pacedAt, s.pacedSize, s.paceJitter = now, size, 0
	s.repace(q)
}

// Paced spacing is drawn uniformly from 1/2 to 3/2 of its mean, per
// packet. Fixed spacing phase-locks the senders of an incast: those the
// last hop trimmed in one burst all wait the same size/w base RTTs at
// their floor and come back in the next burst, and the queue between
// bursts runs dry. On htsim's incast_1024_100K.cm the receiver's link was
// idle 15% of the time for 6 ms while it trimmed every 230 µs (16 base
// RTTs, the floor's spacing); with random spacing it stays busy
// (docs/spec-gaps.md row 44). Randomising timers against synchronisation
// is Floyd and Jacobson's remedy for periodic routing messages (1994).
const (
	paceJitterOne  = 1024
	paceJitterMin  = paceJitterOne / 2
	paceJitterSpan = paceJitterOne
)

// repace sets when the next packet may leave from the current window: a
// window that changed since the latest packet left moves a pending wait.
// The spacing is in base RTTs, not the smoothed RTT: a QP that sends a
// packet every few round trips gets few samples, and the last may date
// from queues long drained (with the smoothed RTT one sender of htsim's
// 127→1 incast on a 3-tier fat tree waited 5 ms at its floor).
func (s *sender) repace(q *QP) {
	w := q.ctl().Window()
	if w >= int(s.pacedSize) || w <= 0 {
		s.paceAt = 0
		return
	}
	if s.paceJitter == 0 {
		// One draw per paced packet, kept when the window moves its wait.
		s.paceJitter = uint16(paceJitterMin + q.ep.rng.IntN(paceJitterSpan))
	}
	s.paceAt = s.pacedAt.Add(q.ep.cfg.BaseRTT * time.Duration(s.pacedSize) * time.Duration(s.paceJitter) / time.Duration(w) / paceJitterOne)
	q.timerDirty = true
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
			return s.fits(q, uint32(s.rec(p).size))
		}
	}
	return false
}

// sendNew writes the next new data packet on EV slot.
func (s *sender) sendNew(q *QP, now mtime.Time, slot evset.Slot, buf []byte, tx *verbs.Transmit) {
	if s.nxt.Sub(s.una) >= len(s.ring) {
		s.grow(max(s.nxt.Sub(s.una)+1, 16, s.ringHint(q)))
	}
	p := s.nxt
	w := s.wqe(s.wqeSend)
	size := uint16(segSize(w, s.seg, q.ep.cfg.MTU))
	// In place, field by field (see Endpoint.address).
	r := s.rec(p)
	*r = txPkt{}
	r.sentAt, r.wqe, r.seg, r.size, r.slot, r.state = now, uint32(s.wqeSend), s.seg, size, slot, pktInFlight
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
	q.ctl().OnSent(now, int(size), false)
	s.pace(q, now, size)
	q.tracePacket(now, trace.PacketSent, p, slot, size, "")
	q.writeData(now, buf, p, false, tx)
}

// sendRetransmit writes the oldest queued retransmission on EV slot.
func (s *sender) sendRetransmit(q *QP, now mtime.Time, slot evset.Slot, buf []byte, tx *verbs.Transmit) {
	p, _ := s.rtxq.Pop()
	r := s.rec(p)
	r.resent(now)
	r.sentAt, r.slot, r.state = now, slot, pktInFlight
	if r.marks&nakMask == nakAccused {
		r.marks = r.marks&^nakMask | nakConfirming
	}
	if r.rtx < 255 {
		r.rtx++
	}
	if s.linkLoss(p) {
		q.timerDirty = true
	}
	s.inflight += int(r.size)
	q.stats.Retransmits++
	q.ctl().OnSent(now, int(r.size), true)
	s.pace(q, now, r.size)
	q.tracePacket(now, trace.PacketRetransmitted, p, slot, r.size, "")
	q.writeData(now, buf, p, true, tx)
}

// pickDataEV chooses the EV of a data packet among the planes in mask:
// one REPS or the mixed mode picks, or a random one of those in service.
func (q *QP) pickDataEV(now mtime.Time, mask uint32) (evset.Slot, bool) {
	if q.mixed != nil {
		if slot, ok := q.mixed.next(q.ep.rng, q.evs, mask); ok {
			return slot, true
		}
	}
	if q.reps != nil {
		if slot, ok := q.reps.next(now); ok {
			if plane := uint32(1) << q.evs.Plane(slot); mask&plane != 0 && q.evs.Usable(plane) {
				return slot, true
			}
		}
	}
	return q.evs.Pick(now, mask, q.ep.rng)
}

// pickRetransmitEV chooses an EV for a retransmission, avoiding the EV that
// lost the packet when another is available (digest §3.5).
func (q *QP) pickRetransmitEV(now mtime.Time, mask uint32) (evset.Slot, bool) {
	head, _ := q.tx.rtxq.Peek()
	old := q.tx.rec(head).slot
	slot, ok := q.pickDataEV(now, mask)
	if ok && slot == old {
		if again, ok2 := q.evs.Pick(now, mask, q.ep.rng); ok2 {
			slot = again
		}
	}
	return slot, ok
}

// writeData encodes the data packet of PSN p into buf and describes it in tx.
func (q *QP) writeData(now mtime.Time, buf []byte, p psn.PSN, rtx bool, tx *verbs.Transmit) {
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
	plane, ev := q.evs.Plane(r.slot), q.evs.Value(r.slot)
	off := uint64(r.seg) * uint64(e.cfg.MTU)
	// The headers come from the endpoint's template (wire.DataTemplate),
	// filled in place, field by field (see Endpoint.address).
	f := &e.scratch.data
	f.Src = e.ports[plane].addr
	f.Dst = q.remote[plane]
	if q.paths != nil && e.cfg.Encap != EncapPlain {
		f.Via = q.paths(plane, wire.EV(ev))
	}
	f.TrafficClass, f.EV, f.Opcode = dscp<<2|uint8(wire.ECT0), wire.EV(ev), op
	// Ask for an immediate SACK when this packet ends what we can send
	// for now, so that the tail is not left to the SACK timer (UET
	// AckRequest).
	f.AckReq = rtx || last && s.wqeSend == s.wqeTail || q.ctl().Window()-s.inflight < e.cfg.MTU
	f.Rtx, f.DestQP, f.PSN = rtx, q.remoteQPN, uint32(p)
	f.METH.MSN, f.METH.RQMSN, f.TxTimestamp = w.msn, w.rqmsn, timestamp(now)
	f.RETH.VA, f.RETH.RKey, f.RETH.DMALen = w.remoteVA+off, w.rkey, uint32(w.length)
	f.Imm, f.PayloadLen = wire.ImmDt(w.imm), int(r.size)
	var payload []byte
	if w.src != nil {
		payload = w.src[off : off+uint64(r.size)]
	}
	n := len(e.dataTpl.Append(buf[:0], f, payload))
	kind := verbs.KindData
	if rtx {
		kind = verbs.KindRetransmit
	}
	tx.Port, tx.Len, tx.WireLen, tx.QPN, tx.Kind = plane, n, e.dataTpl.Len(op, int(r.size)), q.qpn, kind
	tx.Dst, tx.EV, tx.TrafficClass = f.Dst, f.EV, f.TrafficClass
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

// unlinkLoss takes p off the loss list. The timer follows the list's
// head, whose loss timer may be the longer (lossTimeoutOf): a head sent
// before the latest trim NACK that gives way to one sent after it moves
// the deadline earlier.
func (s *sender) unlinkLoss(q *QP, p psn.PSN) {
	r := s.rec(p)
	if r.prev == noPSN {
		s.lossHead = r.next
		if r.next != noPSN && since(s.trimAt, r.sentAt) && !since(s.trimAt, s.rec(r.next).sentAt) {
			q.timerDirty = true
		}
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

// requeue takes p out of flight and queues it for retransmission. dead
// says the copy in flight will never reach the peer: a NACK said so.
func (s *sender) requeue(q *QP, p psn.PSN, dead bool) {
	r := s.rec(p)
	if !dead {
		r.mayEcho()
	}
	s.unlinkLoss(q, p)
	s.land(q, r.size)
	r.state = pktLost
	s.rtxq.Push(p)
}

// land takes a packet of size bytes out of flight. The pace wait holds
// only with nothing in flight (fits), so the timer counts it only then
// (deadline): a flight that empties may move the deadline earlier.
func (s *sender) land(q *QP, size uint16) {
	s.inflight -= int(size)
	if s.inflight == 0 && s.paceAt > q.now {
		q.timerDirty = true
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
		if w := q.ctl().Window(); w != before {
			q.ep.trace(t, trace.Record{Time: now, Kind: trace.CwndChanged, QPN: q.qpn, Cwnd: w, Inflight: q.tx.inflight})
		}
	}
}
