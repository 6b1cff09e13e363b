package roce

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/internal/timerq"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// Errors a QP fails with (in mrc.EventQPError and flushed completions)
// beyond the MRC core's: each wraps the core error a host already
// branches on, so errors.Is(err, mrc.ErrRemoteFatal) holds for the first
// two and errors.Is(err, mrc.ErrNoPath) for the third.
var (
	// ErrRemoteAccess: the peer NAKed a WRITE for a bad R_Key or range.
	ErrRemoteAccess = fmt.Errorf("%w: remote access error (NAK)", verbs.ErrRemoteFatal)
	// ErrRemoteInvalid: the peer NAKed a request as invalid (or sent a
	// remote operational error).
	ErrRemoteInvalid = fmt.Errorf("%w: invalid request (NAK)", verbs.ErrRemoteFatal)
	// ErrRNRRetryExceeded: the peer kept answering RNR (no receive
	// posted for a WRITE_IMM) past the RNR retry count.
	ErrRNRRetryExceeded = fmt.Errorf("%w: RNR retry count exceeded", verbs.ErrNoPath)
)

// QP is one RC queue pair: a requester that sends WRITEs in PSN order on
// one port and one ECMP path, and a responder that accepts the peer's
// WRITEs in PSN order. A QP belongs to one Endpoint and shares its (lack
// of) concurrency safety.
type QP struct {
	ep        *Endpoint
	qpn       uint32
	state     verbs.QPState
	err       error
	destroyed bool
	stats     Stats

	timer   timerq.Node // the QP's entry in the endpoint's timer heap
	inReady bool        // queued in its port's ready list

	// Set by Connect.
	port      int
	src, dst  [16]byte
	remoteQPN uint32
	sport     uint16
	flow      uint32

	req requester
	rsp responder
	cc  bool  // DCQCN on: rp and the pacer apply
	rp  DCQCN // the reaction point
	pc  pacer
	ext Reaction // CCBECN's reaction point, or nil

	tracedRate int64 // the last DCQCN rate traced
}

// QPN returns the QP's number.
func (q *QP) QPN() uint32 { return q.qpn }

// State returns the QP's state: mrc.StateReset until Connect, then
// mrc.StateRTS, or mrc.StateError.
func (q *QP) State() verbs.QPState { return q.state }

// Err returns why the QP entered ERROR, or nil.
func (q *QP) Err() error { return q.err }

// Stats returns the QP's counters.
func (q *QP) Stats() Stats { return q.stats }

// Port returns the port the QP lives on.
func (q *QP) Port() int { return q.port }

// Path returns the UDP source port and IPv6 flow label of every packet
// the QP sends: what an ECMP fabric hashes to pick its path.
func (q *QP) Path() (srcPort uint16, flowLabel uint32) { return q.sport, q.flow }

// Remote returns the peer port's address.
func (q *QP) Remote() netip.Addr { return netip.AddrFrom16(q.dst) }

// Rate returns the QP's DCQCN sending rate at now in bits per second (the
// line rate when congestion control is off).
func (q *QP) Rate(now mtime.Time) int64 {
	if !q.cc {
		return q.ep.cfg.LinkBitsPerSec
	}
	return q.rp.Rate(now)
}

// DCQCN returns the QP's reaction point, or nil when congestion control
// is off. It is for inspection; the QP drives it.
func (q *QP) DCQCN() *DCQCN {
	if !q.cc {
		return nil
	}
	return &q.rp
}

// Connect moves the QP from RESET to RTS: it binds the QP to its port and
// ECMP path, learns the peer, and may then post WRITEs and accept the
// peer's. It stands for the verbs transitions RESET→INIT→RTR→RTS.
func (q *QP) Connect(now mtime.Time, a ConnectAttr) error {
	if q.state != verbs.StateReset || q.destroyed {
		return fmt.Errorf("%w: Connect in %v", verbs.ErrQPState, q.state)
	}
	e := q.ep
	a.withDefaults()
	if err := a.validate(len(e.ports)); err != nil {
		return err
	}
	q.port = a.Port
	q.src, q.dst = e.ports[a.Port].addr, a.Remote.As16()
	q.remoteQPN = a.RemoteQPN
	q.sport, q.flow = a.SrcPort, a.FlowLabel
	h := pathHash(e.cfg.Seed, q.src, q.qpn)
	if q.sport == 0 {
		q.sport = 0xC000 | uint16(h&0x3FFF)
	}
	if q.flow == 0 {
		q.flow = 1 + uint32(h>>32)%wire.FlowLabelMask
	}
	q.req.init(now, a)
	q.rsp.init(psn.PSN(a.RecvPSN), uint8(a.MinRNRTimer), a.ReorderWindow)
	q.cc = e.cfg.CC == CCDCQCN
	if q.cc {
		q.rp.init(e.cfg.DCQCN, e.cfg.LinkBitsPerSec, now)
		q.tracedRate = e.cfg.LinkBitsPerSec
	}
	if e.cfg.CC == CCBECN {
		q.ext = e.cfg.NewReaction(now)
	}
	q.setState(now, verbs.StateRTS)
	return nil
}

// SetError moves the QP to ERROR: posted WRITEs complete with
// mrc.ErrFlushed and the QP sends and accepts nothing more.
func (q *QP) SetError(now mtime.Time) {
	q.fail(now, verbs.ErrFlushed)
	q.ep.update(q, now)
}

func (q *QP) setState(now mtime.Time, s verbs.QPState) {
	if t := q.ep.cfg.Tracer; t != nil {
		t.Trace(&trace.Record{Time: now, Kind: trace.QPState, QPN: q.qpn, From: q.state.String(), To: s.String()})
	}
	q.state = s
}

// fail moves the QP to ERROR with err and flushes its WRITEs.
func (q *QP) fail(now mtime.Time, err error) {
	if q.state == verbs.StateError {
		return
	}
	q.err = err
	q.setState(now, verbs.StateError)
	q.ep.emit(verbs.Event{Kind: verbs.EventQPError, Time: now, QPN: q.qpn, Err: err})
	q.req.flush(q, now)
	q.rsp.clearCtrl()
}

// MaxWriteLen is the largest WRITE: the RETH DMA length is 32 bits, and
// the MRC core's limit is kept.
const MaxWriteLen = verbs.MaxWriteLen

// PostWrite queues a WRITE or WRITE_IMM. It fails unless the QP is in
// RTS, the local range lies in a registered region of this endpoint, and
// the remote range lies in wr.Remote.
func (q *QP) PostWrite(now mtime.Time, wr verbs.WriteRequest) error {
	if q.state != verbs.StateRTS {
		return fmt.Errorf("%w: PostWrite in %v", verbs.ErrQPState, q.state)
	}
	r := q.ep.mem.Lookup(wr.Local.Key)
	if r == nil {
		return fmt.Errorf("%w: local key %#x", verbs.ErrBadMR, wr.Local.Key)
	}
	if wr.Length > MaxWriteLen {
		return fmt.Errorf("%w: %d bytes, at most %d", verbs.ErrInvalidAttr, wr.Length, MaxWriteLen)
	}
	off, ok := r.Span(r.Addr+wr.LocalOffset, wr.Length)
	if !ok || wr.LocalOffset > r.Len {
		return fmt.Errorf("%w: offset %d + %d bytes in a region of %d", verbs.ErrLocalBounds, wr.LocalOffset, wr.Length, r.Len)
	}
	if wr.RemoteOffset > wr.Remote.Len || wr.Length > wr.Remote.Len-wr.RemoteOffset {
		return fmt.Errorf("%w: offset %d + %d bytes in a region of %d", verbs.ErrRemoteBounds, wr.RemoteOffset, wr.Length, wr.Remote.Len)
	}
	var src []byte
	if r.Buf != nil {
		src = r.Buf[off : off+wr.Length]
	}
	if err := q.req.post(q, wr, src); err != nil {
		return err
	}
	q.ep.update(q, now)
	return nil
}

// PostRecv posts a receive for one WRITE_IMM from the peer; id comes back
// in its mrc.EventRecvImm. Allowed in RESET and RTS. A WRITE_IMM that
// finds no receive posted is answered with an RNR NAK, and the peer
// resends it after the RNR timer.
func (q *QP) PostRecv(id uint64) error {
	if q.state == verbs.StateError || q.destroyed {
		return fmt.Errorf("%w: PostRecv in %v", verbs.ErrQPState, q.state)
	}
	q.rsp.recvs = append(q.rsp.recvs, id)
	return nil
}

// sendable reports whether q has a packet to send at now, ports aside.
func (q *QP) sendable(now mtime.Time) bool {
	if q.state != verbs.StateRTS {
		return false
	}
	return q.rsp.hasCtrl() || q.req.hasData() && q.dataAllowedAt(now) <= now
}

// dataAllowedAt returns when q's next data packet may go, given that it
// has one: after any RNR wait and, below line rate, the pacer's gap.
func (q *QP) dataAllowedAt(now mtime.Time) mtime.Time {
	t := q.req.holdUntil
	if q.cc {
		if rate := q.rp.Rate(now); rate < q.ep.cfg.LinkBitsPerSec {
			t = max(t, q.pc.next(rate))
		}
	}
	if q.ext != nil {
		t = max(t, q.ext.SendAt(now))
	}
	return t
}

// deadline returns q's next timer deadline: the local ACK timer while
// PSNs are outstanding, and, when data waits for the pacer or an RNR
// wait, the time it may go or the rate next rises, whichever is first.
func (q *QP) deadline(now mtime.Time) mtime.Time {
	if q.state != verbs.StateRTS {
		return mtime.Never
	}
	d := q.req.rtoDeadline()
	if q.req.hasData() {
		if t := q.dataAllowedAt(now); t > now {
			d = min(d, t)
			if q.cc && t > q.req.holdUntil {
				d = min(d, q.rp.NextIncrease())
			}
			if q.ext != nil && t > q.req.holdUntil {
				d = min(d, q.ext.NextChange(now))
			}
		}
	}
	return d
}

// onTimer runs the local ACK timer; the pacer needs nothing but the
// re-evaluation update does.
func (q *QP) onTimer(now mtime.Time) {
	if q.state != verbs.StateRTS {
		return
	}
	q.req.onTimer(q, now)
}

// poll writes q's next packet into buf: a CNP, NAK or ACK first, then
// data.
func (q *QP) poll(now mtime.Time, buf []byte) (verbs.Transmit, bool) {
	if q.state != verbs.StateRTS {
		return verbs.Transmit{}, false
	}
	if q.rsp.hasCtrl() {
		if tx, ok := q.rsp.writeCtrl(q, now, buf); ok {
			return tx, true
		}
	}
	if !q.req.hasData() || q.dataAllowedAt(now) > now {
		return verbs.Transmit{}, false
	}
	return q.req.sendData(q, now, buf), true
}

// handle processes a packet addressed to q.
func (q *QP) handle(now mtime.Time, p *Packet, phantom bool) {
	e := q.ep
	if q.state != verbs.StateRTS {
		e.drop(now, &q.stats, q.qpn, verbs.DropQPState)
		return
	}
	if p.IP.Src != q.dst {
		e.drop(now, &q.stats, q.qpn, verbs.DropBadSource)
		return
	}
	switch op := p.Opcode(); {
	case op.IsData():
		q.rsp.recvData(q, now, p, phantom)
	case op == OpAck:
		if p.BTH.Resv8a&becn != 0 {
			q.onBECN(now)
		}
		q.req.onAETH(q, now, psn.PSN(p.BTH.PSN), p.AETH.Syndrome)
	case op == OpCNP:
		q.onCNP(now)
	}
}

// onCNP is the reaction point's input.
func (q *QP) onCNP(now mtime.Time) {
	q.stats.CNPsReceived++
	q.stats.ECNEchoes++
	if !q.cc {
		return
	}
	if q.rp.OnCNP(now) {
		q.stats.RateCuts++
	}
	q.traceRate(now)
}

// onBECN is CCBECN's reaction point input: an ACK with the BECN bit.
func (q *QP) onBECN(now mtime.Time) {
	q.stats.BECNsReceived++
	q.stats.ECNEchoes++
	if q.ext != nil && q.ext.OnBECN(now) {
		q.stats.RateCuts++
	}
}

// address fills the IP and UDP headers of pk for a packet of q: every
// packet of a QP, data and control, carries the same source port and
// flow label, so it hashes onto the same path.
func (q *QP) address(pk *Packet, dscp uint8, ecn wire.ECN) {
	pk.IP = wire.IPv6{TrafficClass: dscp<<2 | uint8(ecn), FlowLabel: q.flow, NextHeader: wire.ProtoUDP,
		HopLimit: 64, Src: q.src, Dst: q.dst}
	pk.UDP = wire.UDP{SrcPort: q.sport, DstPort: wire.UDPPortRoCEv2}
}

// traceRate traces the DCQCN rate if it changed since last traced. The
// trace schema has no rate kind yet: the record is CwndChanged with Cwnd
// holding the rate in Mb/s and Reason "rate_mbps".
func (q *QP) traceRate(now mtime.Time) {
	t := q.ep.cfg.Tracer
	if t == nil || !q.cc {
		return
	}
	if r := q.rp.Rate(now); r != q.tracedRate {
		q.tracedRate = r
		t.Trace(&trace.Record{Time: now, Kind: trace.CwndChanged, QPN: q.qpn, Cwnd: int(r / 1e6), Reason: "rate_mbps"})
	}
}

// tracePacket traces a packet event of q.
func (q *QP) tracePacket(now mtime.Time, k trace.Kind, p psn.PSN, bytes int, reason string) {
	if t := q.ep.cfg.Tracer; t != nil {
		t.Trace(&trace.Record{Time: now, Kind: k, QPN: q.qpn, PSN: uint32(p), EV: wire.JoinEV(q.sport, q.flow),
			Plane: q.port, Bytes: bytes, Reason: reason})
	}
}

// timeoutOf returns the local ACK timeout for exponent t: 4.096 µs × 2^t.
func timeoutOf(t int) time.Duration { return time.Duration(4096<<t) * time.Nanosecond }

// pathHash draws a QP's UDP source port and flow label: a hash of the
// endpoint's seed, the port's address and the QP number, so that a QP's
// path is reproducible and independent of the order of the verbs, and
// differs between hosts that share a seed.
func pathHash(seed uint64, addr [16]byte, qpn uint32) uint64 {
	h := mix64(seed ^ 0x243f6a8885a308d3)
	h = mix64(h ^ binary.BigEndian.Uint64(addr[:8]))
	h = mix64(h ^ binary.BigEndian.Uint64(addr[8:]))
	return mix64(h ^ uint64(qpn))
}

// mix64 is the SplitMix64 finalizer (Steele, Lea and Flood, 2014).
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// TimerNode gives the endpoint's timer heap its bookkeeping in q.
func (q *QP) TimerNode() *timerq.Node { return &q.timer }
