// Package swnet runs the pure switch logic of package vswitch, the same
// code the simulator uses, over real packets: `mrc switch`. Each port is a
// Link (an AF_PACKET socket on a network interface, or memory in tests);
// one goroutine owns the vswitch.Switch and does everything the simulator
// does in virtual time, with the wall clock: SRv6 uN shift-and-forward
// (or ECMP, or structured EV) from a static table, egress queues with ECN
// marking, trimming to the priority header queue, tail drop, and each
// port's line rate and propagation delay (this kernel has no netem).
// docs/switch.md describes the table file and the counters.
//
// # Time
//
// A port's serialiser runs in virtual time: a packet starts when the
// previous one has finished or when it was queued, whichever is later,
// so a loop that wakes late (Go timers have tens of microseconds of
// slack) sends the packets it owes in a burst and the port's average
// rate stays exact. A packet reaches the neighbour Delay after its last
// bit leaves.
package swnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// Stats is a snapshot of the switch's counters.
type Stats struct {
	Name    string  `json:"name"`
	Mode    string  `json:"mode"`
	Seconds float64 `json:"seconds"`
	// Received .. Marked: the vswitch counters.
	Received       uint64            `json:"received"`
	Enqueued       uint64            `json:"enqueued"`
	Sent           uint64            `json:"sent"`
	SentBytes      uint64            `json:"sent_bytes"`
	Trimmed        uint64            `json:"trimmed"`
	TrimmedLastHop uint64            `json:"trimmed_lasthop"`
	Marked         uint64            `json:"ecn_marked"`
	MarkedInner    uint64            `json:"ecn_marked_inner"` // inner headers marked too (ECNInner)
	Drops          map[string]uint64 `json:"drops"`            // by vswitch.DropCause name
	NoBuffer       uint64            `json:"no_buffer"`        // packets dropped on arrival: every buffer in use
	Ignored        uint64            `json:"ignored"`          // link-local and multicast packets (NDP, MLD) not forwarded
	Ports          []PortStats       `json:"ports"`
}

// PortStats are one port's counters.
type PortStats struct {
	Name         string `json:"name"`
	Peer         string `json:"peer"`
	Up           bool   `json:"up"`
	RxPackets    uint64 `json:"rx_packets"`
	RxBytes      uint64 `json:"rx_bytes"`
	TxPackets    uint64 `json:"tx_packets"` // handed to the link
	TxBytes      uint64 `json:"tx_bytes"`
	TxErrors     uint64 `json:"tx_errors"`    // refused by the link (down, no neighbour)
	LostOnWire   uint64 `json:"lost_on_wire"` // in flight (delay line) when the link went down
	Ignored      uint64 `json:"ignored"`
	Trimmed      uint64 `json:"trimmed"`
	Marked       uint64 `json:"ecn_marked"`
	Dropped      uint64 `json:"dropped"`
	MaxBytes     int64  `json:"max_queued_bytes"`
	QueuedData   int    `json:"queued_data_bytes"`
	QueuedHeader int    `json:"queued_header_bytes"`
}

// Switch is a running software switch. Run drives it; Stats and Do reach
// its state from other goroutines.
type Switch struct {
	t     *Table
	sw    *vswitch.Switch
	links []Link
	ports []portState
	epoch time.Time

	pool [][]byte
	lens []int
	free []vswitch.Handle

	rx      chan *rxBatch
	freeB   chan *rxBatch
	calls   chan func()
	closing chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
	runOnce sync.Once

	noBuffer, ignored, markedInner uint64
	logf                           func(format string, args ...any)
}

// SetLogf sets where the switch reports its ports going down and up;
// call it before Run.
func (s *Switch) SetLogf(f func(format string, args ...any)) { s.logf = f }

type portState struct {
	tx    vswitch.Transmitter
	delay mtime.Picos
	line  []delayed
	head  int
	up    bool
	st    PortStats
	out   [][]byte
	outH  []vswitch.Handle
}

type delayed struct {
	h  vswitch.Handle
	at mtime.Picos
}

type rxBatch struct {
	port  int
	bufs  [][]byte
	sizes []int
	n     int
}

const rxBatchLen = 64

// New returns a switch for t over links, one per t.Ports, in order. It
// does not start it.
func New(t *Table, links []Link) (*Switch, error) {
	if len(links) != len(t.Ports) {
		return nil, fmt.Errorf("swnet: %d links for %d ports", len(links), len(t.Ports))
	}
	cfg := t.Switch
	cfg.Ports = len(t.Ports)
	sw, err := vswitch.New(cfg)
	if err != nil {
		return nil, err
	}
	for i, p := range t.Ports {
		if p.Queue != nil {
			if err := sw.SetPortQueue(i, *p.Queue); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range t.Routes {
		if err := sw.AddRoute(r.Prefix.Addr().As16(), r.Prefix.Bits(), r.Ports...); err != nil {
			return nil, err
		}
	}
	if len(t.Default) > 0 {
		if err := sw.SetDefault(t.Default...); err != nil {
			return nil, err
		}
	}
	s := &Switch{
		t: t, sw: sw, links: links, epoch: time.Now(),
		ports:   make([]portState, len(links)),
		pool:    make([][]byte, t.Pool),
		lens:    make([]int, t.Pool),
		rx:      make(chan *rxBatch, 2*len(links)),
		freeB:   make(chan *rxBatch, 2*len(links)),
		calls:   make(chan func()),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	for i := t.Pool - 1; i >= 0; i-- {
		s.free = append(s.free, vswitch.Handle(i))
	}
	for i, p := range t.Ports {
		ps := &s.ports[i]
		ps.tx.BitsPerSec = p.Rate
		ps.delay = mtime.PicosOf(p.Delay)
		ps.up = true
		ps.st.Name = p.Name
		ps.st.Up = true
		if p.Peer != nil {
			ps.st.Peer = p.Peer.String()
		}
	}
	for range 2 * len(links) {
		b := &rxBatch{bufs: make([][]byte, rxBatchLen), sizes: make([]int, rxBatchLen)}
		slab := make([]byte, rxBatchLen*t.MaxPacket)
		for i := range b.bufs {
			b.bufs[i] = slab[i*t.MaxPacket : (i+1)*t.MaxPacket : (i+1)*t.MaxPacket]
		}
		s.freeB <- b
	}
	return s, nil
}

// Open opens every port of t on its network interface (OpenPacketLink)
// and returns the switch.
func Open(t *Table) (*Switch, error) {
	var links []Link
	for _, p := range t.Ports {
		l, err := OpenPacketLink(p.Name, p.Peer)
		if err != nil {
			for _, o := range links {
				o.Close()
			}
			return nil, err
		}
		links = append(links, l)
	}
	s, err := New(t, links)
	if err != nil {
		for _, o := range links {
			o.Close()
		}
		return nil, err
	}
	return s, nil
}

// Table returns the switch's configuration.
func (s *Switch) Table() *Table { return s.t }

// now returns the switch's clock.
func (s *Switch) now() mtime.Picos { return mtime.PicosOf(time.Since(s.epoch)) }

// Run forwards until ctx is done, then closes the links and returns nil;
// it returns early with an error if a link fails for good. Run may be
// called once.
func (s *Switch) Run(ctx context.Context) error {
	err := errors.New("swnet: Run called twice")
	s.runOnce.Do(func() { err = s.run(ctx) })
	return err
}

func (s *Switch) run(ctx context.Context) error {
	errc := make(chan error, len(s.links))
	s.wg.Add(len(s.links) + 1)
	for p, l := range s.links {
		go s.receiver(p, l, errc)
	}
	go s.monitor()
	defer func() {
		close(s.closing)
		for _, l := range s.links {
			l.Close()
		}
		s.wg.Wait()
		close(s.done)
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.service(s.now())
		wait := time.Hour
		if next != never {
			wait = (next - s.now()).Duration() + 1
			if wait <= 0 {
				// Already due: look at new packets without blocking, then
				// go round.
				select {
				case b := <-s.rx:
					s.receive(b)
				case fn := <-s.calls:
					fn()
				case <-ctx.Done():
					return nil
				default:
				}
				continue
			}
		}
		timer.Reset(wait)
		select {
		case b := <-s.rx:
			s.receive(b)
			// Take what else waits before sending.
			for more := true; more; {
				select {
				case b := <-s.rx:
					s.receive(b)
				default:
					more = false
				}
			}
		case fn := <-s.calls:
			fn()
		case <-timer.C:
		case err := <-errc:
			return err
		case <-ctx.Done():
			return nil
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

const never = mtime.Picos(1<<63 - 1)

// service moves packets from the queues onto the links' serialisers and
// from their delay lines to the links, and returns when it next has work.
func (s *Switch) service(now mtime.Picos) mtime.Picos {
	next := never
	for p := range s.ports {
		ps := &s.ports[p]
		for ps.tx.BusyUntil <= now && s.sw.Backlog(p) {
			d, _ := s.sw.Dequeue(now, p)
			// Virtual time: the packet started when the port freed or
			// when it was queued, whichever is later.
			done := ps.tx.Start(now-d.Sojourn, d.WireLen)
			ps.line = append(ps.line, delayed{h: d.Handle, at: done + ps.delay})
		}
		if s.sw.Backlog(p) {
			next = min(next, ps.tx.BusyUntil)
		}
		for ps.head < len(ps.line) && ps.line[ps.head].at <= now {
			h := ps.line[ps.head].h
			ps.out = append(ps.out, s.pool[h][:s.lens[h]])
			ps.outH = append(ps.outH, h)
			ps.head++
		}
		if len(ps.out) > 0 {
			s.transmit(p)
		}
		if ps.head == len(ps.line) {
			ps.line, ps.head = ps.line[:0], 0
		} else {
			next = min(next, ps.line[ps.head].at)
			if ps.head > 1024 && ps.head > len(ps.line)/2 {
				n := copy(ps.line, ps.line[ps.head:])
				ps.line, ps.head = ps.line[:n], 0
			}
		}
	}
	return next
}

// transmit hands port p's released packets to its link.
func (s *Switch) transmit(p int) {
	ps := &s.ports[p]
	n, err := s.links[p].Send(ps.out)
	for i, pkt := range ps.out {
		if i < n {
			ps.st.TxPackets++
			ps.st.TxBytes += uint64(len(pkt))
		}
	}
	if n < len(ps.out) {
		// Refused (a link down, no neighbour yet) or, at shutdown, not
		// sent: counted either way.
		_ = err
		ps.st.TxErrors += uint64(len(ps.out) - n)
	}
	for _, h := range ps.outH {
		s.release(h)
	}
	ps.out, ps.outH = ps.out[:0], ps.outH[:0]
}

func (s *Switch) alloc() (vswitch.Handle, bool) {
	if len(s.free) == 0 {
		return 0, false
	}
	h := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	if s.pool[h] == nil {
		s.pool[h] = make([]byte, s.t.MaxPacket)
	}
	return h, true
}

func (s *Switch) release(h vswitch.Handle) { s.free = append(s.free, h) }

// ignorable reports packets no switch forwards: to link-local or
// multicast destinations (neighbour discovery, MLD).
func ignorable(pkt []byte) bool {
	if len(pkt) < wire.IPv6Len || pkt[0]>>4 != 6 {
		return false // malformed: Forward counts it
	}
	d := pkt[24]
	return d == 0xff || d == 0xfe && pkt[25]&0xc0 == 0x80
}

// receive forwards and queues a batch, then gives its buffers back.
func (s *Switch) receive(b *rxBatch) {
	now := s.now()
	s.service(now) // dequeue what is due first, so queues are as long as they are
	in := b.port
	ps := &s.ports[in]
	for i := range b.n {
		pkt := b.bufs[i][:b.sizes[i]]
		ps.st.RxPackets++
		ps.st.RxBytes += uint64(len(pkt))
		if ignorable(pkt) {
			ps.st.Ignored++
			s.ignored++
			continue
		}
		h, ok := s.alloc()
		if !ok {
			s.noBuffer++
			continue
		}
		buf := s.pool[h][:copy(s.pool[h], pkt)]
		out, drop := s.sw.Forward(buf, in)
		if drop != vswitch.DropNone {
			s.release(h)
			continue
		}
		v := s.sw.Enqueue(now, out, in, h, buf, len(buf)+s.t.Overhead)
		if v.Drop != vswitch.DropNone {
			s.release(h)
			continue
		}
		s.lens[h] = v.Len
		if v.Marked && s.t.ECNInner && markInner(buf[:v.Len]) {
			s.markedInner++
		}
	}
	b.n = 0
	s.freeB <- b
}

// markInner marks the inner header of an IPv6-in-IPv6 packet (through an
// SRH) CE and reports whether it did.
func markInner(pkt []byte) bool {
	nh, off := pkt[6], wire.IPv6Len
	if nh == wire.ProtoRouting {
		if len(pkt) < off+8 {
			return false
		}
		nh, off = pkt[off], off+8+8*int(pkt[off+1])
	}
	if nh != wire.ProtoIPv6 || len(pkt) < off+wire.IPv6Len {
		return false
	}
	return wire.MarkCE(pkt[off:])
}

// receiver moves batches from link p to the loop until the link closes.
func (s *Switch) receiver(p int, l Link, errc chan<- error) {
	defer s.wg.Done()
	fails := 0
	for {
		var b *rxBatch
		select {
		case b = <-s.freeB:
		case <-s.closing:
			return
		}
		n, err := l.Receive(b.bufs, b.sizes)
		if err != nil {
			s.freeB <- b
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if fails++; fails > 1000 {
				errc <- fmt.Errorf("port %s: %w", s.t.Ports[p].Name, err)
				return
			}
			select {
			case <-s.closing:
				return
			case <-time.After(time.Millisecond):
			}
			continue
		}
		fails = 0
		b.port, b.n = p, n
		select {
		case s.rx <- b:
		case <-s.closing:
			return
		}
	}
}

// monitorEvery is how often the links' carrier is checked.
const monitorEvery = 20 * time.Millisecond

// monitor follows the links' carrier: a port whose link goes down is
// taken down in the switch (its queues flushed, its packets on the wire
// lost), and brought back up with it.
func (s *Switch) monitor() {
	defer s.wg.Done()
	t := time.NewTicker(monitorEvery)
	defer t.Stop()
	up := make([]bool, len(s.links))
	for i := range up {
		up[i] = true
	}
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		for p, l := range s.links {
			u := l.Up()
			if u == up[p] {
				continue
			}
			up[p] = u
			select {
			case s.calls <- func() { s.setPortUp(p, u) }:
			case <-s.closing:
				return
			}
		}
	}
}

func (s *Switch) setPortUp(p int, up bool) {
	ps := &s.ports[p]
	ps.up, ps.st.Up = up, up
	s.sw.SetPortUp(p, up)
	if up {
		if s.logf != nil {
			s.logf("port %s up", ps.st.Name)
		}
		return
	}
	before := s.sw.Counters.Drops[vswitch.DropLinkDown]
	s.sw.Flush(p, s.release, nil)
	lost := len(ps.line) - ps.head
	for _, d := range ps.line[ps.head:] {
		s.release(d.h)
		ps.st.LostOnWire++
	}
	ps.line, ps.head = ps.line[:0], 0
	if s.logf != nil {
		s.logf("port %s down: %d queued packets flushed, %d lost on the wire", ps.st.Name, s.sw.Counters.Drops[vswitch.DropLinkDown]-before, lost)
	}
}

// Do runs fn in the switch's goroutine, with the pure switch, and waits
// for it; after Run has returned it runs fn at once.
func (s *Switch) Do(fn func(sw *vswitch.Switch)) {
	ran := make(chan struct{})
	select {
	case s.calls <- func() { fn(s.sw); close(ran) }:
		<-ran
	case <-s.done:
		fn(s.sw)
	}
}

// Stats returns a snapshot of the counters, taken in the switch's
// goroutine.
func (s *Switch) Stats() Stats {
	var st Stats
	s.Do(func(sw *vswitch.Switch) { st = s.stats() })
	return st
}

func (s *Switch) stats() Stats {
	c := s.sw.Counters
	st := Stats{
		Name: s.t.Switch.Name, Mode: s.t.Switch.Mode.String(), Seconds: time.Since(s.epoch).Seconds(),
		Received: c.Received, Enqueued: c.Enqueued, Sent: c.Sent, SentBytes: c.SentBytes,
		Trimmed: c.Trimmed, TrimmedLastHop: c.TrimmedLastHop, Marked: c.Marked, MarkedInner: s.markedInner,
		Drops: map[string]uint64{}, NoBuffer: s.noBuffer, Ignored: s.ignored,
	}
	for cause := vswitch.DropMalformed; cause < vswitch.NumDropCauses; cause++ {
		st.Drops[cause.String()] = c.Drops[cause]
	}
	for p := range s.ports {
		ps := s.ports[p].st
		pc := s.sw.PortCounters(p)
		ps.Trimmed, ps.Marked, ps.Dropped, ps.MaxBytes = pc.Trimmed, pc.Marked, pc.Dropped, pc.MaxBytes
		ps.QueuedData, ps.QueuedHeader = s.sw.Queued(p)
		if pl, ok := s.links[p].(*PacketLink); ok && ps.Peer == "" {
			if mac, ok := peerOf(pl); ok {
				ps.Peer = mac
			}
		}
		st.Ports = append(st.Ports, ps)
	}
	return st
}
