package mptcp

import (
	"fmt"

	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/verbs"
)

// Endpoint is one host's MPTCP stack: its ports and connections, over a
// tcp.Endpoint that holds every subflow. It has the MRC core's
// host-facing method set (PollTransmit, HandleDatagram, NextTimeout,
// HandleTimeout, PollEvent). It is a pure state machine (see the package
// comment) and is not safe for concurrent use.
type Endpoint struct {
	cfg     Config
	tcp     *tcp.Endpoint
	up      verbs.PortMask
	conns   []*Conn // by creation: connection k's subflows are QPNs first+k·Subflows …
	first   uint32  // the QPN of the first subflow
	events  fifo.Queue[verbs.Event]
	lastNow mtime.Time
}

// NewEndpoint returns an endpoint with cfg. Every port starts up.
func NewEndpoint(cfg Config) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	if p := cfg.problem(); p != "" {
		return nil, fmt.Errorf("%w: mptcp: %s", verbs.ErrInvalidAttr, p)
	}
	t, err := tcp.NewEndpoint(cfg.TCP)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{cfg: cfg, tcp: t, up: 1<<len(cfg.TCP.Ports) - 1}
	e.cfg.TCP = t.Config()
	return e, nil
}

// Config returns the endpoint's configuration with defaults filled in.
func (e *Endpoint) Config() Config { return e.cfg }

// CreateConn returns a new, unconnected connection with its subflows.
// Its number is its first subflow's QPN; subflow i has that number plus
// i, so a peer knows every subflow's port from the connection's number.
func (e *Endpoint) CreateConn() (*Conn, error) {
	if len(e.conns) >= e.cfg.MaxConns {
		return nil, verbs.ErrTooManyQPs
	}
	c := &Conn{ep: e, subs: make([]subflow, e.cfg.Subflows)}
	for i := range c.subs {
		q, err := e.tcp.CreateConn()
		if err != nil {
			return nil, err
		}
		if i == 0 {
			c.qpn = q.QPN()
		}
		if q.QPN() != c.qpn+uint32(i) {
			return nil, fmt.Errorf("mptcp: subflow %d has QPN %d, not %d", i, q.QPN(), c.qpn+uint32(i)) // tcp numbers connections in order
		}
		c.subs[i] = subflow{c: c, q: q, idx: i}
	}
	if len(e.conns) == 0 {
		e.first = c.qpn
	}
	e.conns = append(e.conns, c)
	return c, nil
}

// Conn returns the connection with number qpn, or nil.
func (e *Endpoint) Conn(qpn uint32) *Conn {
	k := int(qpn-e.first) / e.cfg.Subflows
	if qpn < e.first || k >= len(e.conns) || e.conns[k].qpn != qpn {
		return nil
	}
	return e.conns[k]
}

// Stats returns the endpoint's counters: every connection's summed.
func (e *Endpoint) Stats() Stats {
	var s Stats
	for _, c := range e.conns {
		s.add(&c.stats)
		s.Stats.PayloadReceived += c.rcv.Received()
	}
	s.Subflows = e.tcp.Stats()
	s.fill()
	return s
}

// SetPortUp records that port p's link went down or came back. The
// subflows on a down port get no new data; what they hold is reinjected
// when their retransmission timer fires.
func (e *Endpoint) SetPortUp(now mtime.Time, p int, up bool) error {
	if err := e.tcp.SetPortUp(now, p, up); err != nil {
		return err
	}
	if up {
		e.up |= 1 << p
		for _, c := range e.conns {
			c.schedule(now, nil)
		}
	} else {
		e.up &^= 1 << p
	}
	return nil
}

// PollTransmit writes the next segment of any subflow to send on one of
// the ports in free into buf (tcp.Endpoint.PollTransmit: buf must hold
// tcp.IPv6HeaderRoom bytes, the payload is phantom). The Transmit's QPN
// is the connection's, whichever subflow sends.
func (e *Endpoint) PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (verbs.Transmit, bool) {
	e.lastNow = now
	tx, ok := e.tcp.PollTransmit(now, free, buf)
	if ok {
		tx.QPN -= (tx.QPN - e.first) % uint32(e.cfg.Subflows)
	}
	return tx, ok
}

// HandleDatagram processes one packet received on port at now
// (tcp.Endpoint.HandleDatagram). pkt is not retained.
func (e *Endpoint) HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int) {
	e.lastNow = now
	e.tcp.HandleDatagram(now, port, pkt, wireLen)
}

// NextTimeout returns when HandleTimeout should next be called, or
// mtime.Never: the subflows' earliest timer.
func (e *Endpoint) NextTimeout() mtime.Time { return e.tcp.NextTimeout() }

// HandleTimeout runs every timer due at now. Calling it early or twice is
// harmless.
func (e *Endpoint) HandleTimeout(now mtime.Time) {
	e.lastNow = now
	e.tcp.HandleTimeout(now)
}

// PollEvent returns the next event, if any: verbs.EventWriteDone (a
// message data-acked whole) or verbs.EventRecvImm (a message received
// whole and in order in the data stream).
func (e *Endpoint) PollEvent() (verbs.Event, bool) { return e.events.Pop() }

// PendingEvents returns the number of events PollEvent has to return:
// a host can skip polling when it is 0.
func (e *Endpoint) PendingEvents() int { return e.events.Len() }
