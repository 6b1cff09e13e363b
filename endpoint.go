package mrc

import (
	"fmt"
	"net/netip"

	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/internal/xrand"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/wire"
)

// PortMask is a set of ports: bit p is port (plane) p.
type PortMask uint32

// AllPorts is the mask of every port.
const AllPorts PortMask = 1<<MaxPlanes - 1

// Transmit describes a packet PollTransmit wrote.
type Transmit struct {
	Port    int // the port (plane) to send it on
	Len     int // bytes written to the buffer
	WireLen int // length on the wire; larger than Len when the payload is phantom
	QPN     uint32
	Kind    PacketKind
}

// PacketKind classifies transmitted packets for hosts that keep statistics.
type PacketKind uint8

const (
	KindData PacketKind = iota
	KindRetransmit
	KindSACK
	KindNACK
	KindProbe
	KindEndpoint
)

var kindNames = [...]string{"data", "retransmit", "sack", "nack", "probe", "endpoint"}

func (k PacketKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("PacketKind(%d)", uint8(k))
}

// MaxHeaderLen is the largest header stack the endpoint writes: outer IPv6,
// inner IPv6, UDP, BTH, METH, TSETH, RETH and ImmDt. A transmit buffer needs
// MaxHeaderLen + MTU + 8 bytes (pad and ICRC).
const MaxHeaderLen = 40 + 40 + 8 + 12 + 4 + 4 + 16 + 4

type port struct {
	addr [16]byte
	up   bool
}

// Endpoint is one MRC NIC: its ports, memory regions and QPs. It is a pure
// state machine (see the package comment) and is not safe for concurrent
// use.
type Endpoint struct {
	cfg    Config
	rng    *xrand.Rand
	ports  []port
	up     PortMask
	stats  Stats // endpoint-level counts (drops before a QP is known)
	events eventQueue

	regions []region
	nextVA  uint64

	qps     []*QP // index qpn-firstQPN
	freeQPN []uint32
	ready   qpQueue // QPs that may have something to send, round-robin
	timers  timerHeap

	peers   []*peer    // nodes this endpoint has QPs with, for port status
	epWork  bool       // an endpoint message is due
	epTimer mtime.Time // when the next endpoint message falls due

	rx wire.Packet // decode scratch
	tx wire.Packet // encode scratch
}

// pkeyMask selects the partition of a P_Key; its top bit is the
// membership type, which RoCE ignores (IBTA §10.9.3).
const pkeyMask = 0x7fff

// firstQPN is the lowest QP number handed out; 0–2 are reserved (QPN 2
// addresses endpoint operations, digest §3.7).
const firstQPN = 0x100

// NewEndpoint returns an endpoint with cfg. Every port starts up.
func NewEndpoint(cfg Config) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Endpoint{
		cfg:     cfg,
		rng:     xrand.New(cfg.Seed),
		ports:   make([]port, len(cfg.Ports)),
		nextVA:  vaBase,
		epTimer: mtime.Never,
	}
	for i, a := range cfg.Ports {
		e.ports[i] = port{addr: a.As16(), up: true}
		e.up |= 1 << i
	}
	e.tx.NoCRC = cfg.SkipICRC
	return e, nil
}

// Config returns the endpoint's configuration with defaults filled in.
func (e *Endpoint) Config() Config { return e.cfg }

// Ports returns the number of ports (planes).
func (e *Endpoint) Ports() int { return len(e.ports) }

// PortAddr returns the address of port p.
func (e *Endpoint) PortAddr(p int) netip.Addr { return netip.AddrFrom16(e.ports[p].addr) }

// Stats returns the endpoint's counters: its own plus those of every QP.
func (e *Endpoint) Stats() Stats {
	s := e.stats
	for _, q := range e.qps {
		if q != nil {
			s.add(&q.stats)
		}
	}
	return s
}

// QP returns the QP with number qpn, or nil.
func (e *Endpoint) QP(qpn uint32) *QP {
	i := int(qpn) - firstQPN
	if i < 0 || i >= len(e.qps) {
		return nil
	}
	return e.qps[i]
}

// CreateQP returns a new QP in state RESET.
func (e *Endpoint) CreateQP() (*QP, error) {
	var qpn uint32
	if n := len(e.freeQPN); n > 0 {
		qpn = e.freeQPN[n-1]
		e.freeQPN = e.freeQPN[:n-1]
	} else {
		if len(e.qps) >= e.cfg.MaxQPs {
			return nil, ErrTooManyQPs
		}
		qpn = uint32(firstQPN + len(e.qps))
		e.qps = append(e.qps, nil)
	}
	q := &QP{ep: e, qpn: qpn, heapIdx: -1, heapKey: mtime.Never}
	e.qps[qpn-firstQPN] = q
	return q, nil
}

// DestroyQP removes q. Its QP number may be reused.
func (e *Endpoint) DestroyQP(q *QP) {
	if e.QP(q.qpn) != q {
		return
	}
	e.timers.remove(q)
	e.qps[q.qpn-firstQPN] = nil
	e.freeQPN = append(e.freeQPN, q.qpn)
	q.state = StateReset
	q.destroyed = true
}

// PollEvent returns the next event, if any.
func (e *Endpoint) PollEvent() (Event, bool) { return e.events.pop() }

// NextTimeout returns when HandleTimeout should next be called, or
// mtime.Never. It may be earlier than necessary.
func (e *Endpoint) NextTimeout() mtime.Time {
	return mtime.Min(e.timers.min(), e.epTimer)
}

// HandleTimeout runs every timer that is due at now.
func (e *Endpoint) HandleTimeout(now mtime.Time) {
	for {
		q := e.timers.peek()
		if q == nil || q.heapKey > now {
			break
		}
		e.timers.pop()
		q.onTimer(now)
		e.schedule(q, now)
	}
	if e.epTimer <= now {
		e.onEndpointTimer(now)
	}
}

// schedule (re)arms q's timer when something at now may have moved its
// deadline earlier (q.timerDirty), or when q has none armed. A deadline
// that moved later is left to a harmless early wake-up.
func (e *Endpoint) schedule(q *QP, now mtime.Time) {
	if !q.timerDirty && q.heapIdx >= 0 {
		return
	}
	q.timerDirty = false
	d := q.deadline(now)
	if d <= now {
		d = now + 1 // never spin on one instant
	}
	if d < q.heapKey {
		e.timers.set(q, d)
	}
}

// markReady queues q for PollTransmit.
func (e *Endpoint) markReady(q *QP) {
	if !q.inReady {
		q.inReady = true
		e.ready.push(q)
	}
}

// PollTransmit writes the next packet to send on one of the ports in free
// into buf and describes it. buf must hold MaxHeaderLen+MTU+8 bytes. ok is
// false when nothing can be sent on those ports now; the answer can change
// after any input or timeout.
func (e *Endpoint) PollTransmit(now mtime.Time, free PortMask, buf []byte) (tx Transmit, ok bool) {
	free &= e.up
	if free == 0 {
		return Transmit{}, false
	}
	if e.epWork {
		if tx, ok := e.pollEndpoint(now, free, buf); ok {
			return tx, true
		}
	}
	// Round-robin over ready QPs. A QP that has nothing at all to send
	// leaves the list; one that only waits for another port stays.
	for n := e.ready.len(); n > 0; n-- {
		q := e.ready.pop()
		tx, res := q.poll(now, free, buf)
		switch res {
		case pollSent:
			e.ready.push(q)
			e.schedule(q, now)
			return tx, true
		case pollBlocked:
			e.ready.push(q)
		default:
			q.inReady = false
		}
	}
	return Transmit{}, false
}

// HandleDatagram processes one packet received on port at now. pkt holds
// its bytes from the (outermost) IPv6 header on; wireLen is its length on
// the wire, larger than len(pkt) only in simulations whose payloads are
// phantom. pkt is not retained.
func (e *Endpoint) HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int) {
	if port < 0 || port >= len(e.ports) || !e.ports[port].up {
		e.drop(now, &e.stats, 0, DropQPState)
		return
	}
	p := &e.rx
	if err := p.Decode(pkt); err != nil {
		e.drop(now, &e.stats, 0, DropMalformed)
		return
	}
	if p.UDP.DstPort != wire.UDPPortRoCEv2 || !p.BTH.Opcode.Known() {
		e.drop(now, &e.stats, 0, DropNotMRC)
		return
	}
	if p.BTH.PKey&pkeyMask != wire.PKeyDefault&pkeyMask {
		e.drop(now, &e.stats, 0, DropBadPKey)
		return
	}
	if e.cfg.Encap == EncapUSID {
		p.ResolveUSID(wire.F3216)
	}
	if p.Final() != e.ports[port].addr {
		e.drop(now, &e.stats, 0, DropNotMRC)
		return
	}
	phantom := wireLen > len(pkt)
	if phantom && wireLen != p.Len() || !phantom && p.PayloadLen > len(p.Payload) {
		e.drop(now, &e.stats, 0, DropMalformed)
		return
	}
	if !phantom && !e.cfg.SkipICRC {
		switch p.Verify(pkt) {
		case nil:
		case wire.ErrChecksum:
			e.drop(now, &e.stats, 0, DropBadChecksum)
			return
		default:
			e.drop(now, &e.stats, 0, DropBadICRC)
			return
		}
	}
	if p.BTH.DestQP == wire.QPNEndpoint {
		e.handleEndpointOp(now, port, p)
		return
	}
	q := e.QP(p.BTH.DestQP)
	if q == nil {
		e.drop(now, &e.stats, 0, DropUnknownQP)
		return
	}
	q.handle(now, port, p, phantom)
	e.schedule(q, now)
}

func (e *Endpoint) emit(ev Event) { e.events.push(ev) }

// drop counts a discarded packet in s (the QP's or the endpoint's) and
// traces it.
func (e *Endpoint) drop(now mtime.Time, s *Stats, qpn uint32, why DropReason) {
	s.Drops[why]++
	if t := e.cfg.Tracer; t != nil {
		t.Trace(&trace.Record{Time: now, Kind: trace.PacketDropped, QPN: qpn, Reason: why.String()})
	}
}

// tracePacket traces a data-packet event of q.
func (q *QP) tracePacket(now mtime.Time, k trace.Kind, p psn.PSN, slot evset.Slot, bytes uint32, reason string) {
	if t := q.ep.cfg.Tracer; t != nil {
		t.Trace(&trace.Record{Time: now, Kind: k, QPN: q.qpn, PSN: uint32(p), EV: q.evs.Value(slot),
			Plane: q.evs.Plane(slot), Bytes: int(bytes), Reason: reason})
	}
}

// eventQueue is a FIFO of events that reuses its storage.
type eventQueue struct {
	buf  []Event
	head int
}

func (q *eventQueue) push(ev Event) { q.buf = append(q.buf, ev) }

func (q *eventQueue) pop() (Event, bool) {
	if q.head == len(q.buf) {
		return Event{}, false
	}
	ev := q.buf[q.head]
	q.buf[q.head] = Event{}
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return ev, true
}

// String describes the endpoint for debugging.
func (e *Endpoint) String() string {
	return fmt.Sprintf("mrc.Endpoint{ports=%d qps=%d}", len(e.ports), len(e.qps)-len(e.freeQPN))
}

// qpQueue is a FIFO of QPs: a ring that grows by doubling.
type qpQueue struct {
	buf        []*QP // len is a power of two
	head, size int
}

func (q *qpQueue) len() int { return q.size }

func (q *qpQueue) push(x *QP) {
	if q.size == len(q.buf) {
		buf := make([]*QP, max(2*len(q.buf), 4))
		for i := range q.size {
			buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = x
	q.size++
}

func (q *qpQueue) pop() *QP {
	x := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return x
}
