package mptcp

import (
	"fmt"

	"github.com/openmrc/mrc/internal/fifo"
	"github.com/openmrc/mrc/internal/reasm"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/verbs"
)

// Conn is one MPTCP connection: a byte stream each way, carried by its
// subflows, each a TCP connection of its own 5-tuple (so an ECMP fabric
// hashes each onto its own path). Messages posted with PostWrite are
// consecutive runs of the data stream. A Conn belongs to one Endpoint
// and shares its lack of concurrency safety.
type Conn struct {
	ep        *Endpoint
	qpn       uint32
	connected bool
	subs      []subflow
	stats     Stats // the data level's counters (Subflows unused)

	// The data-level sender. Offsets count from 0; on the wire a data
	// sequence number is the offset plus 1 (the IDSN, 0 here, belongs to
	// the handshake).
	una, nxt, end uint64              // data-acked, next new byte to schedule, posted
	writes        fifo.Queue[write]   // posted messages not yet data-acked
	wNext         int                 // index in writes of the message nxt is in
	reinject      fifo.Queue[mapping] // data to send again on another subflow
	// full says the scheduler last stopped for want of room in every
	// subflow's window, not for want of data: until data or subflows
	// change, only a subflow that an ACK opened can take the next run.
	full bool

	// The data-level receiver.
	rcv      reasm.Stream
	recvs    fifo.Queue[uint64]
	unposted int // messages complete before a receive was posted
}

// write is a posted message: its bytes end the data stream at end.
type write struct{ id, bytes, end uint64 }

// mapping is a run of data-stream bytes [dsn, dsn+n) sent on a subflow
// from its stream offset sub (RFC 8684 §3.3.1's mapping): one segment.
type mapping struct {
	sub, dsn uint64
	n        int32
	from     int8 // in the reinject queue: the subflow it timed out on
	psh      bool // a message ends with it
	resent   bool // it was reinjected: a retransmission for the connection
	moved    bool // it has been queued for reinjection elsewhere
}

// subflow is one of a connection's TCP subflows: the tcp.Owner of its
// tcp.Conn.
type subflow struct {
	c    *Conn
	q    *tcp.Conn
	idx  int
	port int
	maps fifo.Queue[mapping] // runs posted and not yet acknowledged on the subflow, by offset
	sent int                 // how many of maps, from the first, have been sent
	next uint64              // the subflow stream offset of the next run
	// The subflow bytes acknowledged at its last two losses, for OLIA's
	// inter-loss distance.
	lossPrev, lossLast uint64
}

var _ tcp.Owner = (*subflow)(nil)

// QPN returns the connection's number (that of its first subflow).
func (c *Conn) QPN() uint32 { return c.qpn }

// Subflow returns subflow i's TCP connection, for inspection.
func (c *Conn) Subflow(i int) *tcp.Conn { return c.subs[i].q }

// Received returns the data bytes received, each counted once, in order
// or not (Stats().PayloadReceived, without summing the subflows).
func (c *Conn) Received() uint64 { return c.rcv.Received() }

// Stats returns the connection's counters: its data level's and its
// subflows' summed.
func (c *Conn) Stats() Stats {
	s := c.stats
	s.Stats.PayloadReceived = c.rcv.Received()
	for i := range c.subs {
		ss := c.subs[i].q.Stats()
		s.Subflows.Add(&ss)
	}
	s.fill()
	return s
}

// Connect sets up every subflow with its peer; the connection may then
// send and receive. It may be called once.
func (c *Conn) Connect(now mtime.Time, a ConnectAttr) error {
	if c.connected {
		return fmt.Errorf("%w: Connect twice", verbs.ErrQPState)
	}
	ports := len(c.ep.cfg.TCP.Ports)
	if err := a.check(ports); err != nil {
		return err
	}
	for i := range c.subs {
		s := &c.subs[i]
		s.port = (a.Port + i) % ports
		err := s.q.Connect(now, tcp.ConnectAttr{Port: s.port, Remote: a.Remote[s.port], RemoteQPN: a.RemoteQPN + uint32(i), Owner: s})
		if err != nil {
			return err
		}
	}
	c.connected = true
	return nil
}

// PostWrite appends a message of wr.Length bytes to the data stream; its
// EventWriteDone (WRID wr.ID) comes when the peer has acknowledged every
// byte at the data level. Only the length and ID matter: the bytes are
// phantom.
func (c *Conn) PostWrite(now mtime.Time, wr verbs.WriteRequest) error {
	if !c.connected {
		return fmt.Errorf("%w: PostWrite before Connect", verbs.ErrQPState)
	}
	if wr.Length == 0 || wr.Length > verbs.MaxWriteLen {
		return fmt.Errorf("%w: %d bytes, want 1..%d", verbs.ErrInvalidAttr, wr.Length, verbs.MaxWriteLen)
	}
	c.end += wr.Length
	c.writes.Push(write{id: wr.ID, bytes: wr.Length, end: c.end})
	c.schedule(now, nil)
	return nil
}

// PostRecv posts a receive for one message from the peer; id comes back
// in its EventRecvImm.
func (c *Conn) PostRecv(id uint64) error {
	if c.unposted > 0 {
		c.unposted--
		c.complete(c.ep.lastNow, id, 0)
		return nil
	}
	c.recvs.Push(id)
	return nil
}

// schedule hands data to subflows while one has room: data waiting for
// reinjection first, then new data in runs of at most an MSS that cross
// neither a message's end nor the peer's receive window, each to the
// subflow with the lowest smoothed RTT whose window has room for it (the
// default scheduler of the multipath-tcp.org kernel, docs/mptcp.md).
// opened, if not nil, is the only subflow whose window can have opened
// since the last call: if that call stopped with every window full, no
// other subflow needs a look.
func (c *Conn) schedule(now mtime.Time, opened *subflow) {
	if !c.full {
		opened = nil
	}
	for {
		for m, ok := c.reinject.Peek(); ok && m.dsn+uint64(m.n) <= c.una; m, ok = c.reinject.Peek() {
			c.reinject.Pop() // acknowledged meanwhile
		}
		m, again := c.reinject.Peek()
		if !again {
			if c.nxt >= c.end {
				c.full = false
				return
			}
			for c.writes.At(c.wNext).end <= c.nxt {
				c.wNext++
			}
			msgEnd := c.writes.At(c.wNext).end
			n := min(uint64(c.ep.cfg.TCP.MSS), msgEnd-c.nxt, c.una+uint64(c.ep.cfg.RecvWindow)-c.nxt)
			if n == 0 { // the peer's window is full: a data ACK may open it on any subflow
				c.full = false
				return
			}
			m = mapping{dsn: c.nxt, n: int32(n), psh: c.nxt+n == msgEnd, from: -1}
		}
		s := c.pick(int(m.n), int(m.from), opened)
		if s == nil {
			c.full = true
			return
		}
		if again {
			c.reinject.Pop()
			c.stats.Reinjections++
		} else {
			c.nxt += uint64(m.n)
			c.stats.DataSent++
			c.stats.PayloadSent += uint64(m.n)
		}
		s.post(now, m, again)
	}
}

// pick returns the subflow for a run of n bytes: of those on a port that
// is up, not recovering from a timeout and with room in their window for
// n bytes, the one with the lowest smoothed RTT (a subflow without an RTT
// sample counts as 0; ties go to the lowest index). A reinjection
// (avoid ≥ 0) never goes back to the subflow it timed out on. With only
// set, only it is considered.
func (c *Conn) pick(n, avoid int, only *subflow) *subflow {
	usable := func(s *subflow) bool {
		return s.idx != avoid && c.ep.up&(1<<s.port) != 0 && !s.q.TimedOut() && s.q.Space() >= n
	}
	if only != nil {
		if usable(only) {
			return only
		}
		return nil
	}
	var best *subflow
	var bestRTT int64
	for i := range c.subs {
		s := &c.subs[i]
		if !usable(s) {
			continue
		}
		rtt, _ := s.q.SRTT()
		if best == nil || int64(rtt) < bestRTT {
			best, bestRTT = s, int64(rtt)
		}
	}
	return best
}

// post sends run m on the subflow.
func (s *subflow) post(now mtime.Time, m mapping, resent bool) {
	m.sub, m.resent, m.moved, m.from = s.next, resent, false, -1
	s.maps.Push(m)
	s.next += uint64(m.n)
	if err := s.q.PostWrite(now, verbs.WriteRequest{ID: m.dsn, Length: uint64(m.n)}); err != nil {
		panic(fmt.Sprintf("mptcp: subflow refused a run: %v", err)) // a connected subflow takes any length
	}
}

// lookup returns the mapping holding subflow offset off, or nil.
func (s *subflow) lookup(off uint64) *mapping {
	if s.sent < s.maps.Len() {
		if m := s.maps.At(s.sent); m.sub == off {
			s.sent++
			return m // new data: the first run not yet sent
		}
	}
	lo, hi := 0, s.maps.Len()
	for lo < hi {
		m := (lo + hi) / 2
		if s.maps.At(m).sub+uint64(s.maps.At(m).n) <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < s.maps.Len() {
		if m := s.maps.At(lo); m.sub <= off {
			return m
		}
	}
	return nil
}

// Outgoing writes the DSS option of a segment (tcp.Owner): the data ACK
// always, and the mapping of the segment's data. A message's last run
// carries PSH.
func (s *subflow) Outgoing(h *tcp.Header, start uint64, n int) (retransmit bool) {
	c := s.c
	d := DSS{HasACK: true, ACK64: true, DataACK: c.rcv.Next() + 1}
	h.Flags &^= tcp.FlagPSH
	if n > 0 {
		if m := s.lookup(start); m != nil {
			off := start - m.sub
			d.HasMap, d.DSN64, d.DSN, d.SSN, d.Length = true, true, m.dsn+off+1, uint32(start+1), uint16(n)
			if m.psh && off+uint64(n) == uint64(m.n) {
				h.Flags |= tcp.FlagPSH
			}
			retransmit = m.resent
		}
	}
	h.MPTCPLen = len(d.Append(h.MPTCP[:0]))
	return retransmit
}

// Incoming takes the DSS option of a received segment (tcp.Owner): its
// data ACK frees data at the sender, its mapping places the payload in
// the data stream. Then the subflow's acknowledged runs are forgotten
// and the scheduler runs.
func (s *subflow) Incoming(now mtime.Time, h *tcp.Header, start uint64, n int) {
	c := s.c
	var d DSS
	ok := h.MPTCPLen > 0 && d.Decode(h.MPTCP[:h.MPTCPLen]) == nil
	if ok && d.HasACK {
		if ack := widen(d.DataACK, d.ACK64, c.una+1); ack > 0 {
			c.dataAcked(now, ack-1)
		}
	}
	if n > 0 {
		dsn := widen(d.DSN, d.DSN64, c.rcv.Next()+1) - 1
		switch {
		case !ok || !d.HasMap || d.SSN != uint32(start+1) || int(d.Length) != n || int64(dsn) < 0:
			c.stats.Drops[verbs.DropMalformed]++ // no usable mapping: the data cannot be placed
		case dsn+uint64(n) > c.rcv.Next()+uint64(c.ep.cfg.RecvWindow): // dsn < 2^63: no overflow
			c.stats.Drops[verbs.DropOutOfWindow]++ // past what the sender may send
		case !c.rcv.Add(reasm.Span{Start: dsn, End: dsn + uint64(n)}, h.Flags&tcp.FlagPSH != 0):
			c.stats.Duplicates++
		default:
			c.stats.DataReceived++
			c.deliver(now)
			if len(c.rcv.Ranges()) == 0 {
				c.ackNow(now) // the application has read all that arrived
			}
		}
	}
	for m, ok := s.maps.Peek(); ok && m.sub+uint64(m.n) <= s.q.Acked(); m, ok = s.maps.Peek() {
		s.maps.Pop()
		s.sent = max(s.sent-1, 0)
	}
	c.schedule(now, s)
}

// dataAcked moves the data-level una to ack and completes the messages it
// covers.
func (c *Conn) dataAcked(now mtime.Time, ack uint64) {
	if ack <= c.una || ack > c.nxt {
		return
	}
	c.una = ack
	for w, ok := c.writes.Peek(); ok && w.end <= c.una; w, ok = c.writes.Peek() {
		c.writes.Pop()
		c.wNext = max(c.wNext-1, 0)
		c.stats.WritesDone++
		c.ep.events.Push(verbs.Event{Kind: verbs.EventWriteDone, Time: now, QPN: c.qpn, WRID: w.id, Bytes: w.bytes})
	}
}

// ackNow makes every subflow send at once the ACK it is delaying. It is
// called when the data level holds nothing out of order, so the
// application has read all that arrived: Linux then acknowledges on each
// subflow a pending pushed segment (mptcp_cleanup_rbuf), and a
// connection's pushes onto a subflow end with PSH, so a subflow's
// segments count as pushed here (the wire's PSH frames the data level's
// messages instead; docs/mptcp.md). The data ACK that completes the
// peer's message goes out at once, and a subflow whose window holds one
// segment does not wait on the timer.
func (c *Conn) ackNow(now mtime.Time) {
	for i := range c.subs {
		c.subs[i].q.AckNow(now)
	}
}

// deliver completes the messages now whole and in order in the data
// stream.
func (c *Conn) deliver(now mtime.Time) {
	for {
		n, ok := c.rcv.Message()
		if !ok {
			return
		}
		id, ok := c.recvs.Pop()
		if !ok {
			c.unposted++
			continue
		}
		c.complete(now, id, n)
	}
}

func (c *Conn) complete(now mtime.Time, id, n uint64) {
	c.stats.ImmsDelivered++
	c.ep.events.Push(verbs.Event{Kind: verbs.EventRecvImm, Time: now, QPN: c.qpn, WRID: id, Bytes: n})
}

// Increase is the coupled congestion-avoidance increase (tcp.Owner).
func (s *subflow) Increase() float64 { return s.c.increase(s) }

// Cut records a loss on the subflow (tcp.Owner): the inter-loss
// distance OLIA uses, and on a retransmission timeout the reinjection of
// the data the subflow holds that is not yet data-acked onto the other
// subflows (the receiver keeps whichever copy arrives first).
func (s *subflow) Cut(now mtime.Time, timeout bool) {
	if a := s.q.Acked(); a != s.lossLast {
		s.lossPrev, s.lossLast = s.lossLast, a
	}
	if !timeout {
		return
	}
	c := s.c
	for i := range s.maps.Len() {
		m := s.maps.At(i)
		if m.moved || m.dsn+uint64(m.n) <= c.una {
			continue
		}
		m.moved = true
		r := *m
		r.from = int8(s.idx)
		c.reinject.Push(r)
	}
	c.schedule(now, nil)
}
