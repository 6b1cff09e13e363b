package roce

import (
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/internal/memreg"
	"github.com/openmrc/mrc/internal/qptable"
	"github.com/openmrc/mrc/internal/timerq"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// Kinds of the packets PollTransmit describes. mrc.PacketKind has no
// names for RoCE's control packets, so ACKs report as mrc.KindSACK, NAKs
// as mrc.KindNACK and CNPs as mrc.KindEndpoint.
const (
	KindData       = verbs.KindData       // a data packet's first transmission
	KindRetransmit = verbs.KindRetransmit // a data packet sent again by go-back-N
	KindACK        = verbs.KindSACK       // ACKNOWLEDGE with an ACK syndrome
	KindNAK        = verbs.KindNACK       // ACKNOWLEDGE with a NAK or RNR NAK syndrome
	KindCNP        = verbs.KindEndpoint   // congestion notification packet
)

type port struct {
	addr [16]byte
	up   bool
}

// Endpoint is one RoCEv2 NIC: its ports, memory regions and RC QPs. It
// has the MRC core's host-facing method set (PollTransmit,
// HandleDatagram, NextTimeout, HandleTimeout, PollEvent), so a host that
// drives an *mrc.Endpoint drives it unchanged. It is a pure state machine
// (see the package comment) and is not safe for concurrent use.
type Endpoint struct {
	cfg    Config
	rng    *rand.Rand
	ports  []port
	up     verbs.PortMask
	stats  Stats // endpoint-level counts (drops before a QP is known)
	events fifo.Queue[verbs.Event]

	mem memreg.Table

	qps      qptable.Table[*QP]
	ready    []fifo.Queue[*QP] // per port: QPs that may have a packet to send
	nextPort int               // round robin over ports
	timers   timerq.Heap[*QP]

	rx Packet // decode scratch
	tx Packet // encode scratch
}

// NewEndpoint returns an endpoint with cfg. Every port starts up.
func NewEndpoint(cfg Config) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Endpoint{
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x517cc1b727220a95)),
		ports: make([]port, len(cfg.Ports)),
		ready: make([]fifo.Queue[*QP], len(cfg.Ports)),
	}
	for i, a := range cfg.Ports {
		e.ports[i] = port{addr: a.As16(), up: true}
		e.up |= 1 << i
	}
	return e, nil
}

// Config returns the endpoint's configuration with defaults filled in.
func (e *Endpoint) Config() Config { return e.cfg }

// Ports returns the number of ports.
func (e *Endpoint) Ports() int { return len(e.ports) }

// PortAddr returns the address of port p.
func (e *Endpoint) PortAddr(p int) netip.Addr { return netip.AddrFrom16(e.ports[p].addr) }

// SetPortUp records that port p's link went down or came back. A down
// port sends and accepts nothing; its QPs stay as they are, so their
// local ACK timers run out and they fail unless the port returns in time
// (an RC QP has no other path).
func (e *Endpoint) SetPortUp(now mtime.Time, p int, up bool) error {
	if p < 0 || p >= len(e.ports) {
		return verbs.ErrBadPort
	}
	e.ports[p].up = up
	if up {
		e.up |= 1 << p
		e.qps.All(func(q *QP) {
			if q.port == p {
				e.update(q, now)
			}
		})
	} else {
		e.up &^= 1 << p
	}
	return nil
}

// Stats returns the endpoint's counters: its own plus those of every QP.
func (e *Endpoint) Stats() Stats {
	s := e.stats
	e.qps.All(func(q *QP) { s.add(&q.stats) })
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

// DestroyQP removes q. Its QP number may be reused. Its posted work is
// dropped without completions.
func (e *Endpoint) DestroyQP(q *QP) {
	if !e.qps.Remove(q.qpn, q) {
		return
	}
	e.timers.Remove(q)
	q.state = verbs.StateReset
	q.destroyed = true
}

// PollEvent returns the next event, if any: mrc.EventWriteDone,
// mrc.EventRecvImm or mrc.EventQPError.
func (e *Endpoint) PollEvent() (verbs.Event, bool) { return e.events.Pop() }

// PendingEvents returns the number of events PollEvent has to return:
// a host can skip polling when it is 0.
func (e *Endpoint) PendingEvents() int { return e.events.Len() }

// NextTimeout returns when HandleTimeout should next be called, or
// mtime.Never: the earliest local ACK timer, and for every QP that has
// data waiting only for its pacer or an RNR wait, the time it may send
// (or its DCQCN rate rises). It may be earlier than necessary. Its answer
// can change after any input and after PollTransmit.
func (e *Endpoint) NextTimeout() mtime.Time { return e.timers.Min() }

// HandleTimeout runs every timer due at now. Calling it early or twice is
// harmless.
func (e *Endpoint) HandleTimeout(now mtime.Time) {
	for {
		q, ok := e.timers.Peek()
		if !ok || q.timer.Key() > now {
			return
		}
		e.timers.Remove(q)
		q.onTimer(now)
		e.update(q, now)
	}
}

// update re-evaluates q after anything at now: it queues q for
// PollTransmit if it has a packet to send now, and arms its timer for the
// next deadline. A deadline already passed (the host has not called
// HandleTimeout yet) is kept 1 ns ahead so that the timer loop cannot
// spin.
func (e *Endpoint) update(q *QP, now mtime.Time) {
	if q.destroyed {
		return
	}
	if q.sendable(now) {
		e.markReady(q)
	}
	d := q.deadline(now)
	if d <= now {
		d = now + 1
	}
	if !q.timer.Queued() || q.timer.Key() != d {
		e.timers.Set(q, d)
	}
}

func (e *Endpoint) markReady(q *QP) {
	if !q.inReady {
		q.inReady = true
		e.ready[q.port].Push(q)
	}
}

// PollTransmit writes the next packet to send on one of the ports in free
// into buf and describes it. buf must hold MaxHeaderLen+MTU+8 bytes
// (PollTransmit panics otherwise; mrc.MaxHeaderLen+MTU+8 also does). ok is
// false when nothing can be sent on those ports now. Ports take turns; on
// a port, QPs take turns, and a QP sends its CNPs, NAKs and ACKs before
// its data. A QP's data waits for its DCQCN pacer and its RNR wait, which
// NextTimeout includes. The answer can change after any input or timeout.
func (e *Endpoint) PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (verbs.Transmit, bool) {
	free &= e.up
	if free == 0 {
		return verbs.Transmit{}, false
	}
	if len(buf) < MaxHeaderLen+e.cfg.MTU+8 {
		panic(fmt.Sprintf("roce: PollTransmit buffer of %d bytes, want at least %d", len(buf), MaxHeaderLen+e.cfg.MTU+8))
	}
	n := len(e.ports)
	for i := range n {
		p := (e.nextPort + i) % n
		if free&(1<<p) == 0 {
			continue
		}
		rq := &e.ready[p]
		for k := rq.Len(); k > 0; k-- {
			q, _ := rq.Pop()
			if tx, ok := q.poll(now, buf); ok {
				rq.Push(q)
				e.nextPort = (p + 1) % n
				e.update(q, now)
				return tx, true
			}
			q.inReady = false
			e.update(q, now)
		}
	}
	return verbs.Transmit{}, false
}

// HandleDatagram processes one packet received on port at now. pkt holds
// its bytes from the IPv6 header on; wireLen is its length on the wire,
// larger than len(pkt) only in simulations whose payloads are phantom.
// pkt is not retained. A packet that is malformed, not RoCEv2 RC for this
// endpoint, or not acceptable to its QP is dropped and counted in
// Stats().Drops, and traced.
func (e *Endpoint) HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int) {
	if port < 0 || port >= len(e.ports) || !e.ports[port].up {
		e.drop(now, &e.stats, 0, verbs.DropQPState)
		return
	}
	p := &e.rx
	switch err := p.Decode(pkt); err {
	case nil:
	case wire.ErrUnsupported:
		e.drop(now, &e.stats, 0, verbs.DropNotMRC)
		return
	default:
		e.drop(now, &e.stats, 0, verbs.DropMalformed)
		return
	}
	if p.IP.Dst != e.ports[port].addr || p.BTH.PKey&0x7FFF != wire.PKeyDefault&0x7FFF {
		e.drop(now, &e.stats, 0, verbs.DropNotMRC)
		return
	}
	phantom := wireLen > len(pkt)
	if phantom && (wireLen != p.Len() || !p.Opcode().IsData()) || !phantom && !p.HasICRC {
		e.drop(now, &e.stats, 0, verbs.DropMalformed)
		return
	}
	if !phantom && !e.cfg.SkipICRC {
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
	q := e.QP(p.BTH.DestQP)
	if q == nil || q.state == verbs.StateReset || q.port != port {
		e.drop(now, &e.stats, 0, verbs.DropUnknownQP)
		return
	}
	q.handle(now, p, phantom)
	e.update(q, now)
}

func (e *Endpoint) emit(ev verbs.Event) { e.events.Push(ev) }

// drop counts a discarded packet in s (the QP's or the endpoint's) and
// traces it.
func (e *Endpoint) drop(now mtime.Time, s *Stats, qpn uint32, why verbs.DropReason) {
	s.Drops[why]++
	if t := e.cfg.Tracer; t != nil {
		t.Trace(&trace.Record{Time: now, Kind: trace.PacketDropped, QPN: qpn, Reason: why.String()})
	}
}

// String describes the endpoint for debugging.
func (e *Endpoint) String() string {
	return fmt.Sprintf("roce.Endpoint{ports=%d qps=%d}", len(e.ports), e.qps.Len())
}
