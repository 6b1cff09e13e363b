package tcp

import (
	"encoding/binary"
	"fmt"

	"github.com/openmrc/mrc/internal/timerq"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// Conn is one TCP connection: a byte stream each way, on one port and
// one 5-tuple (hence one ECMP path) for its whole life. Messages posted
// with PostWrite are consecutive runs of the stream; the segment that
// ends one carries PSH, which is how the receiver finds message ends. A
// Conn belongs to one Endpoint and shares its lack of concurrency safety.
type Conn struct {
	ep        *Endpoint
	qpn       uint32
	connected bool
	stats     Stats

	timer   timerq.Node
	inReady bool

	port             int
	src, dst         [16]byte
	sport, dport     uint16
	flow             uint32
	sendISN, recvISN uint32

	snd   sender
	rcv   receiver
	owner Owner // nil unless the connection is a subflow
}

// TimerNode gives the endpoint's timer heap its bookkeeping.
func (q *Conn) TimerNode() *timerq.Node { return &q.timer }

// QPN returns the connection's number.
func (q *Conn) QPN() uint32 { return q.qpn }

// LocalPort returns the connection's TCP port.
func (q *Conn) LocalPort() uint16 { return uint16(PortBase + q.qpn) }

// Stats returns the connection's counters.
func (q *Conn) Stats() Stats { return q.stats }

// Cwnd returns the congestion window in bytes; Alpha DCTCP's alpha.
func (q *Conn) Cwnd() int { return q.snd.cwnd }

// Alpha returns DCTCP's current alpha (the initial one under NewReno).
func (q *Conn) Alpha() float64 { return q.snd.alpha }

// Connect fixes the connection's port and peer; it may then send and
// receive. It may be called once.
func (q *Conn) Connect(now mtime.Time, a ConnectAttr) error {
	switch {
	case q.connected:
		return fmt.Errorf("%w: Connect twice", verbs.ErrQPState)
	case a.Port < 0 || a.Port >= len(q.ep.ports):
		return fmt.Errorf("%w: port %d of %d", verbs.ErrBadPort, a.Port, len(q.ep.ports))
	case !a.Remote.Is6() || a.Remote.Is4In6():
		return fmt.Errorf("%w: remote address %v is not IPv6", verbs.ErrInvalidAttr, a.Remote)
	case a.RemoteQPN > maxQPs+256:
		return fmt.Errorf("%w: remote QPN %d", verbs.ErrInvalidAttr, a.RemoteQPN)
	}
	q.port, q.src, q.dst = a.Port, q.ep.ports[a.Port].addr, a.Remote.As16()
	q.sport, q.dport = q.LocalPort(), uint16(PortBase+a.RemoteQPN)
	q.sendISN, q.recvISN, q.owner = a.SendISN, a.RecvISN, a.Owner
	q.flow = flowLabel(q.ep.cfg.Seed, &q.src, &q.dst, q.sport, q.dport)
	q.snd.init(&q.ep.cfg, q.owner != nil)
	q.rcv.delackAt = mtime.Never
	if d := q.ep.cfg.HandshakeRTT; d > 0 {
		q.rttSample(d)
	}
	q.connected = true
	q.ep.update(q, now)
	return nil
}

// flowLabel hashes the 5-tuple into a non-zero flow label, as Linux's
// automatic flow labels do (RFC 6437 §3): constant for the connection.
func flowLabel(seed uint64, src, dst *[16]byte, sport, dport uint16) uint32 {
	h := seed ^ 0x9e3779b97f4a7c15
	for _, v := range []uint64{binary.BigEndian.Uint64(src[:8]), binary.BigEndian.Uint64(src[8:]),
		binary.BigEndian.Uint64(dst[:8]), binary.BigEndian.Uint64(dst[8:]), uint64(sport)<<16 | uint64(dport)} {
		h = (h ^ v) * 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	if l := uint32(h) & wire.FlowLabelMask; l != 0 {
		return l
	}
	return 1
}

// PostWrite appends a message of wr.Length bytes to the stream; its
// EventWriteDone (WRID wr.ID) comes when every byte is acknowledged.
// Only the length and ID matter: the bytes are phantom (zeros on the
// wire's checksum, absent from the buffers).
func (q *Conn) PostWrite(now mtime.Time, wr verbs.WriteRequest) error {
	if !q.connected {
		return fmt.Errorf("%w: PostWrite before Connect", verbs.ErrQPState)
	}
	if wr.Length == 0 || wr.Length > verbs.MaxWriteLen {
		return fmt.Errorf("%w: %d bytes, want 1..%d", verbs.ErrInvalidAttr, wr.Length, verbs.MaxWriteLen)
	}
	q.snd.post(wr.ID, wr.Length)
	q.ep.update(q, now)
	return nil
}

// PostRecv posts a receive for one message from the peer; id comes back
// in its EventRecvImm.
func (q *Conn) PostRecv(id uint64) error {
	r := &q.rcv
	if r.unposted > 0 {
		r.unposted--
		q.complete(q.ep.lastNow, id, 0)
		return nil
	}
	r.recvs.Push(id)
	return nil
}

// sendable reports whether the connection has a segment to send now.
func (q *Conn) sendable() bool {
	return q.connected && (q.rcv.ackPending || q.rcv.held.Len() > 0 || q.snd.hasData(q.ep.cfg.MSS))
}

// poll writes the connection's next segment into buf: an ACK due, else a
// data segment cwnd lets out.
func (q *Conn) poll(now mtime.Time, buf []byte) (verbs.Transmit, bool) {
	h := &q.ep.txTCP // not on the stack: an Owner's Outgoing would make it escape
	*h = Header{SrcPort: q.sport, DstPort: q.dport, Flags: FlagACK, Window: 0xFFFF}
	if a, ok := q.rcv.nextAck(); ok {
		h.Seq = q.sendISN + uint32(q.snd.nxt)
		h.Ack = q.recvISN + uint32(a.ack)
		if a.ece {
			h.Flags |= FlagECE
		}
		if q.owner != nil {
			q.owner.Outgoing(h, q.snd.nxt, 0)
		}
		var b [MaxSACKBlocks]span
		h.NSACK = min(q.rcv.sackBlocks(&b), h.SACKRoom())
		for i := range h.NSACK {
			h.SACK[i] = SACKBlock{q.recvISN + uint32(b[i].start), q.recvISN + uint32(b[i].end)}
		}
		q.stats.SACKsSent++
		return q.encode(buf, h, 0, verbs.KindSACK, false), true
	}
	g, fresh := q.nextSeg(now)
	if g == nil {
		return verbs.Transmit{}, false
	}
	h.Seq = q.sendISN + uint32(g.start)
	h.Ack = q.recvISN + uint32(q.rcv.stream.Next())
	if g.psh {
		h.Flags |= FlagPSH
	}
	if q.snd.sendCWR {
		h.Flags |= FlagCWR
		q.snd.sendCWR = false
	}
	if q.owner != nil && q.owner.Outgoing(h, g.start, g.len()) {
		fresh = false
	}
	kind := verbs.KindRetransmit
	if fresh {
		kind = verbs.KindData
	}
	return q.encode(buf, h, g.len(), kind, q.ep.cfg.Variant == DCTCP), true
}

// encode writes IPv6 | TCP for a segment of payload phantom bytes.
func (q *Conn) encode(buf []byte, h *Header, payload int, kind verbs.PacketKind, ect bool) verbs.Transmit {
	ip := wire.IPv6{FlowLabel: q.flow, NextHeader: ProtoTCP, HopLimit: 64, Src: q.src, Dst: q.dst}
	ip.SetDSCP(q.ep.cfg.DSCP)
	if ect {
		ip.SetECN(wire.ECT0)
	}
	tl := h.Len()
	ip.PayloadLen = uint16(tl + payload)
	b := ip.Append(buf[:0])
	b = h.Append(b)
	seg := b[wire.IPv6Len:]
	binary.BigEndian.PutUint16(seg[16:], Checksum(&q.src, &q.dst, seg, tl+payload))
	return verbs.Transmit{Port: q.port, Len: len(b), WireLen: len(b) + payload, QPN: q.qpn, Kind: kind,
		Dst: q.dst, EV: wire.JoinEV(q.sport, q.flow), TrafficClass: ip.TrafficClass}
}

// handle processes a segment addressed to this connection.
func (q *Conn) handle(now mtime.Time, h *Header, payload int, ce bool) {
	var start uint64
	if payload > 0 {
		start = q.rcv.stream.Next() + uint64(int64(int32(h.Seq-q.recvISN-uint32(q.rcv.stream.Next()))))
		if int64(start) < 0 || start > q.rcv.stream.Next()+1<<30 {
			q.ep.drop(&q.stats, verbs.DropOutOfWindow)
			return
		}
		q.onData(now, span{start, start + uint64(payload)}, h.Flags&FlagPSH != 0 && q.owner == nil, ce)
	}
	if h.Flags&FlagACK != 0 && !q.handleAck(now, h, payload) {
		return
	}
	if q.owner != nil {
		q.owner.Incoming(now, h, start, payload)
	}
}

// handleAck processes the acknowledgment fields of a received segment
// with payload bytes; it reports false if it dropped the segment as an
// ACK of bytes never sent.
func (q *Conn) handleAck(now mtime.Time, h *Header, payload int) bool {
	s := &q.snd
	ack := s.una + uint64(int64(int32(h.Ack-q.sendISN-uint32(s.una))))
	if ack > s.nxt || ack < s.una && s.una-ack > 1<<30 {
		q.ep.drop(&q.stats, verbs.DropStale)
		return false
	}
	var sacks [MaxSACKBlocks]span
	n := 0
	for i := range h.NSACK {
		l := s.una + uint64(int64(int32(h.SACK[i].Left-q.sendISN-uint32(s.una))))
		r := s.una + uint64(int64(int32(h.SACK[i].Right-q.sendISN-uint32(s.una))))
		l, r = max(l, s.una), min(r, s.nxt)
		if l < r && int64(l) >= 0 {
			sacks[n] = span{l, r}
			n++
		}
	}
	q.stats.SACKsReceived++
	q.onAck(now, max(ack, s.una), sacks[:n], h.Flags&FlagECE != 0, payload == 0 && ack == s.una)
	return true
}
