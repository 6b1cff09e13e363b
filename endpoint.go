package mrc

import (
	"fmt"
	"net/netip"

	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/internal/memreg"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/internal/qptable"
	"github.com/openmrc/mrc/internal/timerq"
	"github.com/openmrc/mrc/internal/xrand"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

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
	up     verbs.PortMask
	stats  verbs.Stats // endpoint-level counts (drops before a QP is known)
	events fifo.Queue[verbs.Event]

	mem      memreg.Table
	pds      uint32 // protection domains allocated (AllocPD); 0 is the default
	phantoms int    // phantom regions registered: short datagrams are acceptable

	qps    qptable.Table[*QP]
	ready  fifo.Queue[*QP] // QPs that may have something to send, round-robin
	timers timerq.Heap[*QP]

	peers   []*peer    // nodes this endpoint has QPs with, for port status
	epWork  bool       // an endpoint message is due
	epTimer mtime.Time // when the next endpoint message falls due

	rfc    rcvFlow     // the responder's own flow control
	evp    *evProbes   // EV probes sent and answers owed (evprobe.go); nil until the first
	faults []pathFault // paths a QP retired for loss, not seen back (pathshare.go)

	dataTpl wire.DataTemplate // the headers of every data packet (writeData)

	scratch *Scratch
}

// Scratch is the space an Endpoint decodes a datagram, encodes a packet
// and traces an event in (Config.Scratch). Nothing in it outlives a call
// into the endpoint.
type Scratch struct {
	rx, tx wire.Packet
	data   wire.DataFields // a data packet's own fields (writeData)
	// traced is the record every trace call hands the tracer: a Record
	// is valid during the Trace call only, so one serves every call, and
	// a traced event costs no allocation.
	traced trace.Record
}

// pkeyMask selects the partition of a P_Key; its top bit is the
// membership type, which RoCE ignores (IBTA §10.9.3).
const pkeyMask = 0x7fff

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
		epTimer: mtime.Never,
	}
	for i, a := range cfg.Ports {
		e.ports[i] = port{addr: a.As16(), up: true}
		e.up |= 1 << i
	}
	e.dataTpl = wire.NewDataTemplate(dataEncap[cfg.Encap], cfg.Timestamps, cfg.SkipICRC)
	e.scratch = cfg.Scratch
	if e.scratch == nil {
		e.scratch = new(Scratch)
	}
	return e, nil
}

// Config returns the endpoint's configuration with defaults filled in.
func (e *Endpoint) Config() Config { return e.cfg }

// Ports returns the number of ports (planes).
func (e *Endpoint) Ports() int { return len(e.ports) }

// PortAddr returns the address of port p.
func (e *Endpoint) PortAddr(p int) netip.Addr { return netip.AddrFrom16(e.ports[p].addr) }

// Stats returns the endpoint's counters: its own plus those of every QP.
func (e *Endpoint) Stats() verbs.Stats {
	s := e.stats
	e.qps.All(func(q *QP) { s.Add(&q.stats) })
	return s
}

// QP returns the QP with number qpn, or nil.
func (e *Endpoint) QP(qpn uint32) *QP { return e.qps.Get(qpn) }

// CreateQP returns a new QP in state RESET.
func (e *Endpoint) CreateQP() (*QP, error) {
	q := &QP{ep: e}
	q.timer.Init()
	qpn, err := e.qps.Add(q, e.cfg.MaxQPs)
	if err != nil {
		return nil, verbs.ErrTooManyQPs
	}
	q.qpn = qpn
	return q, nil
}

// DestroyQP removes q. Its QP number may be reused.
func (e *Endpoint) DestroyQP(q *QP) {
	if !e.qps.Remove(q.qpn, q) {
		return
	}
	e.timers.Remove(q)
	q.state = verbs.StateReset
	q.destroyed = true
}

// PollEvent returns the next event, if any.
func (e *Endpoint) PollEvent() (verbs.Event, bool) { return e.events.Pop() }

// PendingEvents returns the number of events PollEvent has to return:
// a host can skip polling when it is 0.
func (e *Endpoint) PendingEvents() int { return e.events.Len() }

// NextTimeout returns when HandleTimeout should next be called, or
// mtime.Never. It may be earlier than necessary.
func (e *Endpoint) NextTimeout() mtime.Time {
	return mtime.Min(e.timers.Min(), e.epTimer)
}

// HandleTimeout runs every timer that is due at now.
func (e *Endpoint) HandleTimeout(now mtime.Time) {
	for {
		q, ok := e.timers.Peek()
		if !ok || q.timer.Key() > now {
			break
		}
		e.timers.Remove(q)
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
	q.blockedFree = 0
	if !q.timerDirty && q.timer.Queued() {
		return
	}
	q.timerDirty = false
	d := q.deadline(now)
	if d <= now {
		d = now + 1 // never spin on one instant
	}
	if d < q.timer.Key() {
		e.timers.Set(q, d)
	}
}

// markReady queues q for PollTransmit.
func (e *Endpoint) markReady(q *QP) {
	q.blockedFree = 0
	if !q.inReady {
		q.inReady = true
		e.ready.Push(q)
	}
}

// PollTransmit writes the next packet to send on one of the ports in free
// into buf and describes it. buf must hold MaxHeaderLen+MTU+8 bytes. ok is
// false when nothing can be sent on those ports now; the answer can change
// after any input or timeout.
func (e *Endpoint) PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (tx verbs.Transmit, ok bool) {
	free &= e.up
	if free == 0 {
		return verbs.Transmit{}, false
	}
	if e.epWork && e.pollEndpoint(now, free, buf, &tx) {
		return tx, true
	}
	if e.pollEVAnswer(now, free, buf, &tx) {
		return tx, true
	}
	// Round-robin over ready QPs. A QP that has nothing at all to send
	// leaves the list; one that only waits for another port stays, and is
	// passed by while it waits for a port other than these (blockedFree).
	for n := e.ready.Len(); n > 0; n-- {
		q, _ := e.ready.Pop()
		blocked := q.blockedOn(now)
		if free&^blocked == 0 {
			e.ready.Push(q) // blocked on these ports when last asked
			continue
		}
		switch q.poll(now, free, buf, &tx) {
		case pollSent:
			e.ready.Push(q)
			e.schedule(q, now)
			return tx, true
		case pollBlocked:
			q.blockedFree = blocked | free
			e.ready.Push(q)
		default:
			q.inReady = false
		}
	}
	return verbs.Transmit{}, false
}

// HandleDatagram processes one packet received on port at now. pkt holds
// its bytes from the (outermost) IPv6 header on; wireLen is its length on
// the wire, larger than len(pkt) only in simulations whose payloads are
// phantom. pkt is not retained.
func (e *Endpoint) HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int) {
	if port < 0 || port >= len(e.ports) || !e.ports[port].up {
		e.drop(now, &e.stats, 0, verbs.DropQPState)
		return
	}
	// Only an endpoint with phantom regions (a simulation) takes a
	// datagram shorter than its wire length; anywhere else it is a
	// truncated or forged one.
	phantom := wireLen > len(pkt)
	if wireLen != len(pkt) && (!phantom || e.phantoms == 0) {
		e.drop(now, &e.stats, 0, verbs.DropMalformed)
		return
	}
	p := &e.scratch.rx
	if err := p.Decode(pkt); err != nil {
		e.drop(now, &e.stats, 0, verbs.DropMalformed)
		return
	}
	if p.UDP.DstPort != wire.UDPPortRoCEv2 || !p.BTH.Opcode.Known() {
		e.drop(now, &e.stats, 0, verbs.DropNotMRC)
		return
	}
	if p.BTH.PKey&pkeyMask != wire.PKeyDefault&pkeyMask {
		e.drop(now, &e.stats, 0, verbs.DropBadPKey)
		return
	}
	if e.cfg.Encap == EncapUSID {
		p.ResolveUSID(wire.F3216)
	}
	if p.Final() != e.ports[port].addr {
		e.drop(now, &e.stats, 0, verbs.DropNotMRC)
		return
	}
	if phantom && wireLen > p.Len() {
		e.drop(now, &e.stats, 0, verbs.DropMalformed)
		return
	}
	cut := wireLen < p.Len()
	if cut {
		// The datagram ends before its length fields say (a phantom's
		// wire length counts). A switch that trims by cutting the frame
		// to a fixed size and leaves lengths and checksums as they were
		// (NVIDIA Spectrum, SONiC's switch-trimming; vswitch
		// QueueConfig.TrimTo) leaves this, with a trimmed DSCP: a data
		// packet so marked whose MRC headers survived whole is a trimmed
		// header (docs/spec-gaps.md row 22). Anything else was truncated
		// or forged.
		if !p.BTH.Opcode.IsData() || !e.cfg.DSCP.IsTrim(p.OuterDSCP()) {
			e.drop(now, &e.stats, 0, verbs.DropMalformed)
			return
		}
		p.Trimmed, p.PayloadLen, p.Payload = true, 0, nil
	}
	if !phantom && !cut && !e.cfg.SkipICRC {
		switch p.Verify(pkt) {
		case nil:
		case wire.ErrChecksum:
			e.drop(now, &e.stats, 0, verbs.DropBadChecksum)
			return
		default:
			e.drop(now, &e.stats, 0, verbs.DropBadICRC)
			return
		}
	}
	if p.BTH.DestQP == wire.QPNEndpoint {
		e.handleEndpointOp(now, port, p)
		return
	}
	q := e.QP(p.BTH.DestQP)
	if q == nil {
		e.drop(now, &e.stats, 0, verbs.DropUnknownQP)
		return
	}
	q.handle(now, port, p, phantom)
	e.schedule(q, now)
}

func (e *Endpoint) emit(ev verbs.Event) { e.events.Push(ev) }

// txPacket returns the packet to encode the next transmit in.
func (e *Endpoint) txPacket() *wire.Packet {
	pk := &e.scratch.tx
	pk.NoCRC = e.cfg.SkipICRC
	return pk
}

// describe fills tx for the packet txPacket just encoded into the
// transmit buffer: n bytes there, wireLen on the wire, sent on port.
func (e *Endpoint) describe(tx *verbs.Transmit, port, n, wireLen int, qpn uint32, kind verbs.PacketKind) {
	pk := &e.scratch.tx
	tx.Port, tx.Len, tx.WireLen, tx.QPN, tx.Kind = port, n, wireLen, qpn, kind
	tx.Address(pk.Final(), &pk.IP, &pk.UDP)
}

// drop counts a discarded packet in s (the QP's or the endpoint's) and
// traces it.
func (e *Endpoint) drop(now mtime.Time, s *verbs.Stats, qpn uint32, why verbs.DropReason) {
	s.Drops[why]++
	if t := e.cfg.Tracer; t != nil {
		e.trace(t, trace.Record{Time: now, Kind: trace.PacketDropped, QPN: qpn, Reason: why.String()})
	}
}

// tracePacket traces a data-packet event of q. It is small enough to be
// inlined: without a tracer, the per-packet cost is one test.
func (q *QP) tracePacket(now mtime.Time, k trace.Kind, p psn.PSN, slot evset.Slot, bytes uint16, reason string) {
	if q.ep.cfg.Tracer != nil {
		q.tracePacketTo(q.ep.cfg.Tracer, now, k, p, slot, bytes, reason)
	}
}

func (q *QP) tracePacketTo(t trace.Tracer, now mtime.Time, k trace.Kind, p psn.PSN, slot evset.Slot, bytes uint16, reason string) {
	q.ep.trace(t, trace.Record{Time: now, Kind: k, QPN: q.qpn, PSN: uint32(p), EV: wire.EV(q.evs.Value(slot)),
		Plane: q.evs.Plane(slot), Bytes: int(bytes), Reason: reason})
}

// trace hands r to t in the scratch record (Scratch.traced): a traced
// event costs no allocation.
func (e *Endpoint) trace(t trace.Tracer, r trace.Record) {
	rec := &e.scratch.traced
	*rec = r
	t.Trace(rec)
}

// String describes the endpoint for debugging.
func (e *Endpoint) String() string {
	return fmt.Sprintf("mrc.Endpoint{ports=%d qps=%d}", len(e.ports), e.qps.Len())
}
