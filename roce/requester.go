package roce

import (
	"time"

	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// The requester: segmentation of posted WRITEs into PSNs, in-order
// sending, cumulative ACKs, go-back-N on a sequence-error NAK, an RNR NAK
// or the local ACK timeout, the retry counters, and completions (IBTA
// Vol. 1 §9.7).
//
// Go-back-N needs no per-packet state: the PSNs of the posted WRITEs are
// consecutive, so the requester rewinds by finding the WRITE that holds
// the PSN to resend from and re-reading its payload from local memory,
// as a NIC does.

// wqe is a posted WRITE.
type wqe struct {
	id       uint64
	src      []byte // payload source; nil for a phantom region
	remoteVA uint64
	rkey     uint32
	length   uint64
	npkts    uint32
	first    psn.PSN // PSN of its first packet, once started
	started  bool
	imm      uint32
	withImm  bool
}

type requester struct {
	una     psn.PSN // oldest unacknowledged PSN
	nxt     psn.PSN // next PSN to send (rewound by go-back-N)
	maxSent psn.PSN // one past the highest PSN ever sent
	maxOut  int     // bound on nxt-una

	wqes    []wqe  // ring by sequence number; grows up to sqDepth
	sqDepth int    // most WRITEs posted and not completed
	head    uint64 // oldest uncompleted
	cur     uint64 // the WRITE nxt belongs to
	seg     uint32 // nxt's packet index within wqes[cur]
	tail    uint64 // next to post

	timeout      time.Duration // local ACK timeout
	retryCnt     int
	retries      int // timeouts and sequence-error NAKs since progress
	rnrRetry     int // 7: without limit
	rnrRetries   int
	lastProgress mtime.Time // the local ACK timer restarts here
	holdUntil    mtime.Time // an RNR NAK's wait
}

func (s *requester) init(now mtime.Time, a ConnectAttr) {
	p := psn.PSN(a.SendPSN)
	*s = requester{
		una: p, nxt: p, maxSent: p,
		maxOut:       a.MaxOutstanding,
		wqes:         make([]wqe, 4),
		sqDepth:      a.SQDepth,
		timeout:      timeoutOf(a.TimeoutExp),
		retryCnt:     a.RetryCount,
		rnrRetry:     a.RNRRetry,
		lastProgress: now,
	}
}

func (s *requester) wqe(seq uint64) *wqe { return &s.wqes[seq&uint64(len(s.wqes)-1)] }

// post queues a WRITE.
func (s *requester) post(q *QP, wr verbs.WriteRequest, src []byte) error {
	if n := s.tail - s.head; n == uint64(len(s.wqes)) {
		if n >= uint64(s.sqDepth) {
			return verbs.ErrQueueFull
		}
		wqes := make([]wqe, 2*len(s.wqes))
		for seq := s.head; seq != s.tail; seq++ {
			wqes[seq&uint64(len(wqes)-1)] = *s.wqe(seq)
		}
		s.wqes = wqes
	}
	mtu := uint64(q.ep.cfg.MTU)
	*s.wqe(s.tail) = wqe{
		id:       wr.ID,
		src:      src,
		remoteVA: wr.Remote.Addr + wr.RemoteOffset,
		rkey:     wr.Remote.Key,
		length:   wr.Length,
		npkts:    uint32(max(1, (wr.Length+mtu-1)/mtu)),
		imm:      wr.Imm,
		withImm:  wr.WithImm,
	}
	s.tail++
	return nil
}

// outstanding reports whether PSNs are sent and not acknowledged.
func (s *requester) outstanding() bool { return s.una != s.maxSent }

// hasData reports whether a data packet is ready to go, pacing and RNR
// waits aside: a WRITE has packets left and the outstanding bound allows.
func (s *requester) hasData() bool {
	return s.cur != s.tail && s.nxt.Sub(s.una) < s.maxOut
}

// rtoDeadline returns when the local ACK timer expires, or mtime.Never.
func (s *requester) rtoDeadline() mtime.Time {
	if !s.outstanding() {
		return mtime.Never
	}
	return s.lastProgress.Add(s.timeout)
}

// sendData writes the data packet of PSN nxt into buf and advances.
func (s *requester) sendData(q *QP, now mtime.Time, buf []byte) verbs.Transmit {
	e := q.ep
	w := s.wqe(s.cur)
	p := s.nxt
	if s.seg == 0 && !w.started {
		w.first, w.started = p, true
	}
	mtu := uint64(e.cfg.MTU)
	off := uint64(s.seg) * mtu
	size := int(min(mtu, w.length-off))
	first, last := s.seg == 0, s.seg+1 == w.npkts
	var op Opcode
	switch {
	case first && last && w.withImm:
		op = OpWriteOnlyImm
	case first && last:
		op = OpWriteOnly
	case first:
		op = OpWriteFirst
	case last && w.withImm:
		op = OpWriteLastImm
	case last:
		op = OpWriteLast
	default:
		op = OpWriteMiddle
	}
	if !s.outstanding() {
		s.lastProgress = now // the local ACK timer starts with the first packet out
	}
	retx := p.Less(s.maxSent)
	if !retx {
		s.maxSent = p.Add(1)
	}
	s.nxt = p.Add(1)
	if s.seg++; s.seg == w.npkts {
		s.cur++
		s.seg = 0
	}
	// Ask for an ACK at the end of every message and when the
	// outstanding bound stops us (IBTA leaves the A bit to the
	// requester).
	ackReq := last || s.nxt.Sub(s.una) >= s.maxOut

	pk := &e.tx
	q.address(pk, e.cfg.DSCP, wire.ECT0)
	pk.BTH = wire.BTH{Opcode: wire.Opcode(op), PKey: wire.PKeyDefault, DestQP: q.remoteQPN, AckReq: ackReq, PSN: uint32(p)}
	pk.RETH = wire.RETH{VA: w.remoteVA, RKey: w.rkey, DMALen: uint32(w.length)}
	pk.Imm = wire.ImmDt(w.imm)
	pk.PayloadLen = size
	var payload []byte
	if w.src != nil {
		payload = w.src[off : off+uint64(size)]
	}
	n := len(AppendPacket(buf[:0], pk, payload))
	wl := pk.Len()

	kind := KindData
	if retx {
		kind = KindRetransmit
		q.stats.Retransmits++
		q.tracePacket(now, trace.PacketRetransmitted, p, size, "")
	} else {
		q.stats.DataSent++
		q.stats.PayloadSent += uint64(size)
		q.tracePacket(now, trace.PacketSent, p, size, "")
	}
	if q.cc {
		rate := q.rp.Rate(now)
		q.pc.sent(now, int64(wl)*8, rate)
		q.rp.OnSent(now, wl)
		q.traceRate(now)
	}
	if q.ext != nil {
		q.ext.OnSent(now, wl)
	}
	return verbs.Transmit{Port: q.port, Len: n, WireLen: wl, QPN: q.qpn, Kind: kind}.Addressed(pk.IP.Dst, &pk.IP, &pk.UDP)
}

// onAETH processes an ACKNOWLEDGE for PSN p with syndrome syn.
func (s *requester) onAETH(q *QP, now mtime.Time, p psn.PSN, syn uint8) {
	e := q.ep
	switch kind, val := syn>>synKindShift&synKindMask, syn&synValueMask; {
	case syn&0x80 != 0 || kind == 2:
		e.drop(now, &q.stats, q.qpn, verbs.DropMalformed) // reserved syndrome
	case kind == synKindACK:
		// An ACK acknowledges every PSN up to and including p.
		if d := p.Sub(s.una); d < -1 || d >= s.maxSent.Sub(s.una) {
			s.stale(q, now, d < -1)
			return
		}
		q.stats.SACKsReceived++
		s.ackThrough(q, now, p.Add(1))
	default:
		// A NAK names the PSN the responder expects, a sent one, and
		// acknowledges everything before it.
		if d := p.Sub(s.una); d < 0 || d >= s.maxSent.Sub(s.una) {
			s.stale(q, now, d < 0)
			return
		}
		q.stats.NACKsReceived++
		progress := s.ackThrough(q, now, p)
		switch {
		case kind == synKindRNR:
			q.stats.RNRNAKsReceived++
			if s.rnrRetry != 7 {
				if s.rnrRetries++; s.rnrRetries > s.rnrRetry {
					q.fail(now, ErrRNRRetryExceeded)
					return
				}
			}
			s.holdUntil = now.Add(rnrDelay(val))
			s.lastProgress = s.holdUntil // the responder is alive: time from the resend
			q.tracePacket(now, trace.PacketNacked, p, 0, "rnr")
			s.goBack(q, p)
		case val == NakPSNSeqError:
			q.stats.SeqNAKsReceived++
			q.tracePacket(now, trace.PacketNacked, p, 0, "psn_seq_error")
			if !progress && !s.retry(q, now) {
				return
			}
			s.goBack(q, p)
		case val == NakRemoteAccess:
			q.fail(now, ErrRemoteAccess)
		default:
			q.fail(now, ErrRemoteInvalid)
		}
	}
}

// stale discards an ACK or NAK about PSNs not outstanding: a drop, but
// for one about PSNs already acknowledged (old) on a QP that expects
// reordering, which later ones overtook on another path.
func (s *requester) stale(q *QP, now mtime.Time, old bool) {
	if old && q.rsp.window > 0 {
		q.stats.StaleACKs++
		return
	}
	q.ep.drop(now, &q.stats, q.qpn, verbs.DropStale)
}

// ackThrough acknowledges every PSN before end, completing WRITEs, and
// reports whether that was progress.
func (s *requester) ackThrough(q *QP, now mtime.Time, end psn.PSN) bool {
	if !s.una.Less(end) {
		return false
	}
	if q.ep.cfg.Tracer != nil {
		for p := s.una; p != end; p = p.Add(1) {
			q.tracePacket(now, trace.PacketAcked, p, 0, "")
		}
	}
	s.una = end
	s.retries, s.rnrRetries = 0, 0
	s.lastProgress = max(s.lastProgress, now)
	if s.nxt.Less(s.una) {
		s.seek(s.una) // acknowledged beyond what go-back-N resent: skip ahead
	}
	s.complete(q, now)
	return true
}

// retry counts one retry (a timeout, or a sequence-error NAK without
// progress) and fails the QP when the retry count is spent.
func (s *requester) retry(q *QP, now mtime.Time) bool {
	if s.retries++; s.retries > s.retryCnt {
		q.fail(now, verbs.ErrNoPath)
		return false
	}
	return true
}

// goBack rewinds the send point to p, which is outstanding.
func (s *requester) goBack(q *QP, p psn.PSN) {
	q.stats.GoBacks++
	q.stats.GoBackPSNs += uint64(max(0, s.nxt.Sub(p)))
	s.seek(p)
}

// seek moves the send point to PSN p, at or after una: it finds the WRITE
// holding p among the uncompleted ones.
func (s *requester) seek(p psn.PSN) {
	s.nxt = p
	for seq := s.head; seq != s.tail; seq++ {
		w := s.wqe(seq)
		if !w.started {
			s.cur, s.seg = seq, 0
			return
		}
		if d := p.Sub(w.first); d < int(w.npkts) {
			s.cur, s.seg = seq, uint32(d)
			return
		}
	}
	s.cur, s.seg = s.tail, 0
}

// complete delivers, in post order, a completion for every WRITE whose
// PSNs are all acknowledged.
func (s *requester) complete(q *QP, now mtime.Time) {
	for s.head != s.tail {
		w := s.wqe(s.head)
		if !w.started || s.una.Sub(w.first) < int(w.npkts) {
			return
		}
		q.stats.WritesDone++
		q.ep.emit(verbs.Event{Kind: verbs.EventWriteDone, Time: now, QPN: q.qpn, WRID: w.id, Bytes: w.length})
		*w = wqe{}
		s.head++
	}
}

// onTimer runs the local ACK timer: without progress for the timeout, the
// requester counts a retry and resends everything from una (IBTA Vol. 1
// §9.7.6.1.3), or fails the QP when the retry count is spent.
func (s *requester) onTimer(q *QP, now mtime.Time) {
	if !s.outstanding() || now < s.rtoDeadline() {
		return
	}
	q.stats.RetryTimeouts++
	q.tracePacket(now, trace.PacketLost, s.una, 0, "local_ack_timeout")
	if !s.retry(q, now) {
		return
	}
	s.lastProgress = now
	s.goBack(q, s.una)
}

// flush completes every posted WRITE with mrc.ErrFlushed.
func (s *requester) flush(q *QP, now mtime.Time) {
	for ; s.head != s.tail; s.head++ {
		w := s.wqe(s.head)
		q.ep.emit(verbs.Event{Kind: verbs.EventWriteDone, Time: now, QPN: q.qpn, WRID: w.id, Bytes: w.length, Err: verbs.ErrFlushed})
		*w = wqe{}
	}
	s.cur, s.seg = s.tail, 0
	s.una, s.nxt = s.maxSent, s.maxSent
}
