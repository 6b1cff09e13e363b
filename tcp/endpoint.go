package tcp

import (
	"fmt"
	"net/netip"

	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/internal/qptable"
	"github.com/openmrc/mrc/internal/timerq"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

type port struct {
	addr [16]byte
	up   bool
}

// Endpoint is one host's TCP stack: its ports and connections. It has the
// MRC core's host-facing method set (PollTransmit, HandleDatagram,
// NextTimeout, HandleTimeout, PollEvent). It is a pure state machine (see
// the package comment) and is not safe for concurrent use.
type Endpoint struct {
	cfg     Config
	ports   []port
	up      verbs.PortMask
	stats   Stats
	events  fifo.Queue[verbs.Event]
	lastNow mtime.Time

	conns    qptable.Table[*Conn]
	ready    []fifo.Queue[*Conn] // per port: connections that may have a segment
	nextPort int
	timers   timerq.Heap[*Conn]

	rxIP         wire.IPv6
	rxTCP, txTCP Header
}

// NewEndpoint returns an endpoint with cfg. Every port starts up.
func NewEndpoint(cfg Config) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Endpoint{cfg: cfg, ports: make([]port, len(cfg.Ports)), ready: make([]fifo.Queue[*Conn], len(cfg.Ports))}
	for i, a := range cfg.Ports {
		e.ports[i] = port{addr: a.As16(), up: true}
		e.up |= 1 << i
	}
	return e, nil
}

// Config returns the endpoint's configuration with defaults filled in.
func (e *Endpoint) Config() Config { return e.cfg }

// PortAddr returns the address of port p.
func (e *Endpoint) PortAddr(p int) netip.Addr { return netip.AddrFrom16(e.ports[p].addr) }

// CreateConn returns a new, unconnected connection.
func (e *Endpoint) CreateConn() (*Conn, error) {
	q := &Conn{ep: e}
	q.timer.Init()
	qpn, err := e.conns.Add(q, e.cfg.MaxQPs)
	if err != nil {
		return nil, verbs.ErrTooManyQPs
	}
	q.qpn = qpn
	return q, nil
}

// Conn returns the connection with number qpn, or nil.
func (e *Endpoint) Conn(qpn uint32) *Conn { return e.conns.Get(qpn) }

// Stats returns the endpoint's counters: its own plus every connection's.
func (e *Endpoint) Stats() Stats {
	s := e.stats
	e.conns.All(func(q *Conn) { s.Add(&q.stats) })
	return s
}

// SetPortUp records that port p's link went down or came back. A down
// port sends and accepts nothing; its connections keep their state and
// their retransmission timers run (TCP has no other path).
func (e *Endpoint) SetPortUp(now mtime.Time, p int, up bool) error {
	if p < 0 || p >= len(e.ports) {
		return verbs.ErrBadPort
	}
	e.ports[p].up = up
	if up {
		e.up |= 1 << p
		e.conns.All(func(q *Conn) {
			if q.port == p {
				e.update(q, now)
			}
		})
	} else {
		e.up &^= 1 << p
	}
	return nil
}

// PollEvent returns the next event, if any: verbs.EventWriteDone or
// verbs.EventRecvImm.
func (e *Endpoint) PollEvent() (verbs.Event, bool) { return e.events.Pop() }

// PendingEvents returns the number of events PollEvent has to return:
// a host can skip polling when it is 0.
func (e *Endpoint) PendingEvents() int { return e.events.Len() }

func (e *Endpoint) emit(ev verbs.Event) { e.events.Push(ev) }

// NextTimeout returns when HandleTimeout should next be called, or
// mtime.Never: the earliest retransmission, reordering, probe or
// delayed-ACK timer.
func (e *Endpoint) NextTimeout() mtime.Time { return e.timers.Min() }

// HandleTimeout runs every timer due at now. Calling it early or twice is
// harmless.
func (e *Endpoint) HandleTimeout(now mtime.Time) {
	e.lastNow = now
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

// update queues q for PollTransmit if it has a segment to send and arms
// its timer at its next deadline.
func (e *Endpoint) update(q *Conn, now mtime.Time) {
	if q.sendable() && !q.inReady {
		q.inReady = true
		e.ready[q.port].Push(q)
	}
	switch d := q.deadline(); {
	case d == mtime.Never:
		e.timers.Remove(q)
	case !q.timer.Queued() || q.timer.Key() != d:
		e.timers.Set(q, max(d, now+1))
	}
}

// PollTransmit writes the next segment to send on one of the ports in
// free into buf and describes it. buf must hold IPv6HeaderRoom bytes (the
// payload is phantom: Transmit.WireLen counts it, buf does not hold it).
// ok is false when nothing can be sent on those ports now. Ports take
// turns; on a port, connections take turns, and a connection sends its
// ACKs before its data.
func (e *Endpoint) PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (verbs.Transmit, bool) {
	e.lastNow = now
	free &= e.up
	if free == 0 {
		return verbs.Transmit{}, false
	}
	if len(buf) < IPv6HeaderRoom {
		panic(fmt.Sprintf("tcp: PollTransmit buffer of %d bytes, want at least %d", len(buf), IPv6HeaderRoom))
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
// larger than len(pkt) when the payload is phantom (then pkt must end
// with the TCP header). pkt is not retained. A packet that is malformed,
// not TCP to one of this endpoint's connections, or from another peer is
// dropped and counted in Stats().Drops.
func (e *Endpoint) HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int) {
	e.lastNow = now
	if port < 0 || port >= len(e.ports) || !e.ports[port].up {
		e.drop(&e.stats, verbs.DropQPState)
		return
	}
	ip, h := &e.rxIP, &e.rxTCP
	if _, err := ip.Decode(pkt); err != nil {
		e.drop(&e.stats, verbs.DropMalformed)
		return
	}
	if ip.NextHeader != ProtoTCP || ip.Dst != e.ports[port].addr {
		e.drop(&e.stats, verbs.DropNotMRC)
		return
	}
	seg := pkt[wire.IPv6Len:]
	hl, err := h.Decode(seg)
	total := int(ip.PayloadLen)
	switch {
	case err != nil, total < hl, wire.IPv6Len+total != max(wireLen, len(pkt)),
		wireLen > len(pkt) && len(seg) != hl, wireLen < len(pkt):
		e.drop(&e.stats, verbs.DropMalformed)
		return
	}
	if !e.cfg.SkipChecksum && Checksum(&ip.Src, &ip.Dst, seg, total) != h.Checksum {
		e.drop(&e.stats, verbs.DropBadChecksum)
		return
	}
	q := e.conns.Get(uint32(h.DstPort) - PortBase)
	if h.DstPort < PortBase || q == nil || !q.connected || q.port != port {
		e.drop(&e.stats, verbs.DropUnknownQP)
		return
	}
	if ip.Src != q.dst || h.SrcPort != q.dport {
		e.drop(&q.stats, verbs.DropBadSource)
		return
	}
	q.handle(now, h, total-hl, ip.ECN() == wire.CE)
	e.update(q, now)
}

// drop counts a discarded packet in s (a connection's or the endpoint's).
func (e *Endpoint) drop(s *Stats, why verbs.DropReason) { s.Drops[why]++ }
