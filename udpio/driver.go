package udpio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/host/pages"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// Options tune a Driver. Zero fields take the defaults in their comments.
type Options struct {
	// FlowLabels copies the flow-label half of each packet's EV into the
	// flow label of the UDP packet that carries it, so a fabric that
	// hashes IPv6 flow labels spreads the EVs over its paths. The Bind
	// must allow per-packet flow labels (StdConfig.FlowLabels). It
	// breaks GSO runs: consecutive packets rarely share an EV.
	FlowLabels bool
	// OnEvent receives every event of the endpoint, in the driver
	// goroutine, after the input that caused it and before the packets
	// that input made the endpoint send. It may call the endpoint's and
	// QPs' methods (ep is the driver's endpoint) and must not block.
	OnEvent func(now mtime.Time, ep *mrc.Endpoint, ev verbs.Event)
	// Tap, when set, sees every packet the endpoint transmits, in the
	// driver goroutine; pkt is valid during the call only.
	Tap func(tx verbs.Transmit, pkt []byte)
	// RxFilter, when set, sees every received datagram before the
	// endpoint does and drops it by returning false (tests inject loss
	// with it). It runs in the driver goroutine.
	RxFilter func(plane int, pkt []byte) bool
	// RxTap, when set, sees every received datagram the endpoint is
	// handed (after RxFilter, with a CE mark already copied in), in the
	// driver goroutine; pkt is valid during the call only. wireLen is the
	// length the endpoint is told (larger than len(pkt) for phantom
	// payloads).
	RxTap func(plane int, pkt []byte, wireLen int)
	// RxBatches is the number of receive batches per plane that may
	// wait for the driver (default 4).
	RxBatches int
	// Phantom accepts datagrams shorter than their IPv6 payload length
	// says: the peer's phantom memory sends headers only, and the core
	// takes the declared length as the wire length. Without it such a
	// datagram, or one longer than its header says, is malformed: it is
	// dropped and counted (DriverStats.RxMalformed).
	Phantom bool
	// NoPoll turns off the non-blocking read of the sockets before a due
	// timer fires (PollBind), for measuring what it prevents: loss
	// timers that fire while the acknowledgements wait in a socket.
	NoPoll bool
}

// DriverStats counts what a Driver did. Per-plane slices are indexed by
// plane.
type DriverStats struct {
	TxPackets, TxBytes []uint64 // datagrams and bytes sent, per plane
	RxPackets, RxBytes []uint64 // datagrams and bytes received, per plane
	TxBursts           uint64   // bursts handed to the Bind
	NoRoute            uint64   // transmits to an address no peer has (dropped)
	RxJunk             uint64   // received datagrams too short to hold an MRC packet
	RxMalformed        uint64   // received datagrams whose IPv6 payload length disagrees with their size
	RxUnknownPeer      uint64   // received from a source address no peer has
	RxSpoofed          uint64   // a peer's address, but not from that peer's socket
	RxFiltered         uint64   // dropped by Options.RxFilter
	RxPolled           uint64   // datagrams read without blocking before a due timer fired
	RecvErrors         uint64   // receive calls that failed (not counting Close)
}

// Peer is a remote endpoint as the driver sees it: its core port addresses
// (what its mrc.Config.Ports holds, and what a QP's RTRAttr.Remote names)
// and, plane by plane, the socket address that reaches that port.
type Peer struct {
	Ports   []netip.Addr
	Sockets []netip.AddrPort
}

// Driver runs one mrc.Endpoint over a Bind. It owns the endpoint: one
// goroutine (RoutineDriver) makes every call into it, fed by one
// receive goroutine per receiving socket (RoutineReceive) through a
// channel of batches, by one timer armed at the endpoint's NextTimeout,
// and by Do. Other goroutines reach the endpoint only through Do.
//
// Framing: each UDP datagram carries one whole datagram of the core, from
// its first IPv6 header to the ICRC (docs/udpio.md). The outer traffic
// class is the core's; a CE mark the network puts on the outer header is
// copied into the core's header on receipt (RFC 6040). The outer flow
// label and source port carry the EV as Options.FlowLabels and the Bind's
// source-port pool say.
type Driver struct {
	bind   Bind
	ep     *mrc.Endpoint
	opt    Options
	epoch  time.Time
	planes int
	pool   int           // sockets per plane
	native bool          // the Bind carries core datagrams as they are (NativeFramer)
	polls  []ReceiveFunc // non-blocking receives (PollBind), or nil

	calls   chan call
	rx      chan *rxBatch
	free    chan *rxBatch
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	errMu   sync.Mutex
	err     error

	recvErrors atomic.Uint64

	// Driver goroutine state.
	peers    []Peer
	lastDst  [16]byte
	lastTo   netip.AddrPort
	lastOK   bool
	armed    mtime.Time
	handed   int   // datagrams handed to the endpoint since the last collect
	unsent   int   // datagrams handed to the endpoint since the last send
	sendErr  error // a send that failed in the middle of a receive batch
	stats    DriverStats
	tx       txBatch
	srcCache struct {
		src  [16]byte
		from netip.Addr
		ok   bool
	}
}

type call struct {
	fn   func(now mtime.Time, ep *mrc.Endpoint) error
	done chan error
}

type rxBatch struct {
	slab []byte
	bufs [][]byte
	dgs  []Datagram
	n    int
}

// rxBuffers is the number of receive buffers in a batch: each holds a
// whole GRO datagram (RecvBufSize).
const rxBuffers = 16

// New opens bind and starts driving an endpoint built from cfg, whose
// Ports must be as many as the bind's planes. The driver runs until Close
// or until the Bind fails (Done, Err).
func New(bind Bind, cfg mrc.Config, opt Options) (*Driver, error) {
	if len(cfg.Ports) != bind.Planes() {
		return nil, fmt.Errorf("udpio: %d endpoint ports for %d planes", len(cfg.Ports), bind.Planes())
	}
	ep, err := mrc.NewEndpoint(cfg)
	if err != nil {
		return nil, err
	}
	if opt.RxBatches == 0 {
		opt.RxBatches = 4
	}
	fns, err := bind.Open()
	if err != nil {
		return nil, err
	}
	d := &Driver{
		bind:    bind,
		ep:      ep,
		opt:     opt,
		epoch:   time.Now(),
		planes:  bind.Planes(),
		pool:    max(1, bind.SourcePorts()),
		calls:   make(chan call),
		rx:      make(chan *rxBatch, len(fns)*opt.RxBatches),
		free:    make(chan *rxBatch, len(fns)*opt.RxBatches),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		armed:   mtime.Never,
	}
	n := d.planes
	d.stats = DriverStats{TxPackets: make([]uint64, n), TxBytes: make([]uint64, n), RxPackets: make([]uint64, n), RxBytes: make([]uint64, n)}
	d.tx.init(ep.Config().MTU)
	for range len(fns) * opt.RxBatches {
		b := &rxBatch{slab: pages.Mapped(rxBuffers * RecvBufSize), dgs: make([]Datagram, rxBuffers*MaxSegments)}
		for i := range rxBuffers {
			b.bufs = append(b.bufs, b.slab[i*RecvBufSize:(i+1)*RecvBufSize])
		}
		d.free <- b
	}
	if nf, ok := bind.(NativeFramer); ok {
		d.native = nf.NativeFraming()
	}
	if pb, ok := bind.(PollBind); ok && !opt.NoPoll {
		if polls := pb.PollFuncs(); len(polls) == len(fns) {
			d.polls = polls
		}
	}
	d.wg.Add(1 + len(fns))
	for _, fn := range fns {
		go d.RoutineReceive(fn)
	}
	go d.RoutineDriver()
	return d, nil
}

// Now returns the driver's clock: the monotonic time since the driver
// started, as the endpoint sees it.
func (d *Driver) Now() mtime.Time { return mtime.Time(time.Since(d.epoch)) }

// Epoch returns the wall-clock time at which the driver's clock read 0:
// the endpoint's time t is Epoch().Add(time.Duration(t)).
func (d *Driver) Epoch() time.Time { return d.epoch }

// Done is closed when the driver has stopped.
func (d *Driver) Done() <-chan struct{} { return d.done }

// Err returns why the driver stopped: nil after Close, the Bind's error
// if it failed.
func (d *Driver) Err() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.err
}

// Close stops the driver: it closes the Bind and waits for every goroutine
// the driver started to return. The endpoint is left as it was. Close is
// idempotent and safe from any goroutine but the driver's own (OnEvent,
// Do callbacks).
func (d *Driver) Close() error {
	d.stop(nil)
	d.wg.Wait()
	return nil
}

func (d *Driver) stop(err error) {
	d.once.Do(func() {
		d.errMu.Lock()
		d.err = err
		d.errMu.Unlock()
		close(d.closing)
		d.bind.Close()
	})
}

// Do runs fn in the driver goroutine with the endpoint and the current
// time, and returns its error once it has run; the packets and events it
// causes are handled right after. It returns ErrDriverClosed if the
// driver has stopped. fn must not call Do.
func (d *Driver) Do(fn func(now mtime.Time, ep *mrc.Endpoint) error) error {
	c := call{fn: fn, done: make(chan error, 1)}
	select {
	case d.calls <- c:
	case <-d.closing:
		return ErrDriverClosed
	}
	select {
	case err := <-c.done:
		return err
	case <-d.done:
		// It may have run just before the driver stopped.
		select {
		case err := <-c.done:
			return err
		default:
			return ErrDriverClosed
		}
	}
}

// AddPeer tells the driver how to reach a remote endpoint. Packets to an
// address of no peer are dropped (DriverStats.NoRoute), and so are packets
// from one (RxUnknownPeer).
func (d *Driver) AddPeer(p Peer) error {
	if len(p.Ports) != len(p.Sockets) {
		return fmt.Errorf("udpio: peer has %d ports and %d sockets", len(p.Ports), len(p.Sockets))
	}
	for i, a := range p.Ports {
		if !a.Is6() || a.Is4In6() {
			return fmt.Errorf("udpio: peer port %d address %v is not IPv6", i, a)
		}
		if !p.Sockets[i].IsValid() {
			return fmt.Errorf("udpio: peer port %d has no socket address", i)
		}
	}
	return d.Do(func(mtime.Time, *mrc.Endpoint) error {
		d.peers = append(d.peers, Peer{Ports: append([]netip.Addr(nil), p.Ports...), Sockets: append([]netip.AddrPort(nil), p.Sockets...)})
		d.lastOK, d.srcCache.ok = false, false
		return nil
	})
}

// Stats returns the driver's counters.
// After the driver stops they are final.
func (d *Driver) Stats() DriverStats {
	var s DriverStats
	copyStats := func(mtime.Time, *mrc.Endpoint) error {
		s = d.stats
		s.TxPackets = append([]uint64(nil), d.stats.TxPackets...)
		s.TxBytes = append([]uint64(nil), d.stats.TxBytes...)
		s.RxPackets = append([]uint64(nil), d.stats.RxPackets...)
		s.RxBytes = append([]uint64(nil), d.stats.RxBytes...)
		return nil
	}
	if d.Do(copyStats) != nil {
		<-d.done // the driver goroutine no longer touches d.stats
		copyStats(0, nil)
	}
	s.RecvErrors = d.recvErrors.Load()
	return s
}

// RoutineReceive moves batches from one ReceiveFunc to the driver until
// the Bind closes.
func (d *Driver) RoutineReceive(fn ReceiveFunc) {
	defer d.wg.Done()
	for {
		var b *rxBatch
		select {
		case b = <-d.free:
		case <-d.closing:
			return
		}
		n, err := fn(b.bufs, b.dgs)
		if err != nil {
			d.free <- b
			if errors.Is(err, net.ErrClosed) {
				return
			}
			d.recvErrors.Add(1)
			select {
			case <-d.closing:
				return
			case <-time.After(time.Millisecond): // do not spin on a persistent error
			}
			continue
		}
		b.n = n
		select {
		case d.rx <- b:
		case <-d.closing:
			return
		}
	}
}

// RoutineDriver owns the endpoint: it feeds it packets, timeouts and
// calls, and sends what it writes.
func (d *Driver) RoutineDriver() {
	defer d.wg.Done()
	defer close(d.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		now := d.Now()
		if d.ep.NextTimeout() <= now {
			// Packets that arrived while the timer fell due go first: a
			// SACK waiting in a batch, or still in a socket because the
			// receive goroutines have not run yet (the process was
			// descheduled), is no loss.
			some := d.drainRx()
			if d.pollRx() {
				some = true
			}
			if some {
				now = d.Now()
			}
			if d.ep.NextTimeout() <= now {
				d.ep.HandleTimeout(now)
			}
		}
		if err := d.flush(now); err != nil || d.sendErr != nil {
			d.stop(errors.Join(d.sendErr, err))
			return
		}
		if next := d.ep.NextTimeout(); next != d.armed {
			d.armed = next
			if next == mtime.Never {
				timer.Stop()
			} else {
				timer.Reset(max(0, next.Sub(d.Now())))
			}
		}
		select {
		case b := <-d.rx:
			d.receive(b)
			// Take whatever else has arrived before sending: the
			// answers to a whole round of packets go out together.
			d.drainRx()
		case c := <-d.calls:
			c.done <- c.fn(d.Now(), d.ep)
		case <-timer.C:
			d.armed = mtime.Never
		case <-d.closing:
			return
		}
	}
}

// drainRx hands the endpoint every batch already waiting and reports
// whether there was one.
func (d *Driver) drainRx() bool {
	some := false
	for {
		select {
		case b := <-d.rx:
			d.receive(b)
			some = true
		default:
			return some
		}
	}
}

// maxPollRounds bounds the non-blocking reads of one socket before a due
// timer fires, so a flood cannot hold the timers off for ever.
const maxPollRounds = 4

// pollRx reads, without blocking, what waits in the Bind's sockets and
// hands it to the endpoint. It reports whether there was anything.
func (d *Driver) pollRx() bool {
	some := false
	for _, fn := range d.polls {
		for range maxPollRounds {
			var b *rxBatch
			select {
			case b = <-d.free:
			default:
				return some // every batch is in use: the receive goroutines are reading
			}
			n, err := fn(b.bufs, b.dgs)
			if err != nil || n == 0 {
				d.free <- b
				break
			}
			b.n = n
			d.stats.RxPolled += uint64(n)
			d.receive(b)
			some = true
		}
	}
	return some
}

// receive hands a batch to the endpoint and returns its buffers.
func (d *Driver) receive(b *rxBatch) {
	now := d.Now()
	for i := range b.n {
		dg := &b.dgs[i]
		pkt := dg.Buf
		if dg.Plane < 0 || dg.Plane >= d.planes {
			continue
		}
		if len(pkt) < wire.IPv6Len+wire.UDPLen || pkt[0]>>4 != 6 {
			d.stats.RxJunk++
			continue
		}
		declared := wire.IPv6Len + int(binary.BigEndian.Uint16(pkt[4:6]))
		if declared != len(pkt) && !(d.opt.Phantom && declared > len(pkt)) {
			d.stats.RxMalformed++
			continue
		}
		if !d.checkSource(pkt, dg.From) {
			continue
		}
		if d.opt.RxFilter != nil && !d.opt.RxFilter(dg.Plane, pkt) {
			d.stats.RxFiltered++
			continue
		}
		if wire.ECN(dg.TClass&3) == wire.CE {
			wire.MarkCE(pkt)
		}
		d.stats.RxPackets[dg.Plane]++
		d.stats.RxBytes[dg.Plane] += uint64(len(pkt))
		// A datagram shorter than its header says carries a phantom
		// payload (Options.Phantom); the core takes the declared
		// length as the wire length and drops it unless the region
		// is phantom too.
		wireLen := declared
		if d.opt.RxTap != nil {
			d.opt.RxTap(dg.Plane, pkt, wireLen)
		}
		d.ep.HandleDatagram(now, dg.Plane, pkt, wireLen)
		d.unsent++
		if d.handed++; d.handed >= flushEvery {
			err := d.collect(now)
			if err == nil && d.unsent >= sendEvery {
				err = d.send()
			}
			if err != nil && d.sendErr == nil {
				d.sendErr = err
			}
		}
	}
	b.n = 0
	d.free <- b
}

// flushEvery is how many datagrams the driver hands the endpoint before it
// takes what they made the endpoint write. The core keeps each QP's SACKs
// and NACKs in a queue of 32 and drops the oldest when it overflows; a
// receive batch holds up to a thousand datagrams, and a SACK dropped while
// a hole pins the cumulative point is never repeated, so its PSNs time out
// at the requester. A datagram makes at most two control packets.
const flushEvery = 16

// sendEvery is how many datagrams the driver hands the endpoint before it
// sends what they made it write, full batch or not: a transmit batch's
// worth. What is taken waits in the transmit batch until then, until the
// batch is full, or until the driver has handed in everything that
// arrived (flush), so a few GSO datagrams carry many SACKs. Waiting for
// the whole receive round instead held the answers to its first packets
// while the rest of the round (up to a thousand datagrams) was handled:
// on loopback that made the round trip ~0.8 ms, so the window the
// default base RTT allows (1.9 MB) carried 17 Gbit/s where the processes
// could move 25.
const sendEvery = IdealBatchSize

// checkSource reports whether pkt, whose outermost source address is a
// core port address, came from the socket of the peer that owns it.
func (d *Driver) checkSource(pkt []byte, from netip.AddrPort) bool {
	src := [16]byte(pkt[8:24])
	c := &d.srcCache
	if !c.ok || c.src != src {
		c.ok = false
		for _, p := range d.peers {
			for i, a := range p.Ports {
				if a.As16() == src {
					c.src, c.from, c.ok = src, p.Sockets[i].Addr(), true
				}
			}
		}
		if !c.ok {
			d.stats.RxUnknownPeer++
			return false
		}
	}
	if from.Addr() != c.from {
		d.stats.RxSpoofed++
		return false
	}
	return true
}

// route returns the socket address of the peer port with core address dst.
func (d *Driver) route(dst [16]byte) (netip.AddrPort, bool) {
	if d.lastOK && d.lastDst == dst {
		return d.lastTo, true
	}
	for _, p := range d.peers {
		for i, a := range p.Ports {
			if a.As16() == dst {
				d.lastDst, d.lastTo, d.lastOK = dst, p.Sockets[i], true
				return d.lastTo, true
			}
		}
	}
	return netip.AddrPort{}, false
}

// flush delivers the endpoint's events and sends everything it has to
// send now, batch by batch, until neither is left.
func (d *Driver) flush(now mtime.Time) error {
	if err := d.collect(now); err != nil {
		return err
	}
	return d.send()
}

// collect delivers the endpoint's events and moves what it has to send
// now into the transmit batch, until neither is left, sending the batch
// whenever it is full. What it leaves in the batch goes with the next
// send.
func (d *Driver) collect(now mtime.Time) error {
	t := &d.tx
	d.handed = 0
	for {
		progress := d.events(now)
		polled := 0
		for t.n < len(t.slots) {
			buf := t.slots[t.n]
			tx, ok := d.ep.PollTransmit(now, verbs.AllPorts, buf)
			if !ok {
				break
			}
			d.add(tx, buf[:tx.Len])
			polled++
		}
		if t.n == len(t.slots) {
			if err := d.send(); err != nil {
				return err
			}
			continue
		}
		if polled == 0 && !progress {
			return nil
		}
	}
}

// send hands the transmit batch to the Bind and empties it.
func (d *Driver) send() error {
	t := &d.tx
	d.unsent = 0
	defer t.reset()
	if len(t.bursts) == 0 {
		return nil
	}
	t.sortBursts()
	d.stats.TxBursts += uint64(len(t.bursts))
	return d.bind.Send(t.bursts)
}

// events hands out the endpoint's events and reports whether there were
// any.
func (d *Driver) events(now mtime.Time) bool {
	some := false
	for {
		ev, ok := d.ep.PollEvent()
		if !ok {
			return some
		}
		some = true
		if d.opt.OnEvent != nil {
			d.opt.OnEvent(now, d.ep, ev)
		}
	}
}

// add queues one transmitted packet into the batch's bursts.
func (d *Driver) add(tx verbs.Transmit, pkt []byte) {
	t := &d.tx
	t.n++
	if d.opt.Tap != nil {
		d.opt.Tap(tx, pkt)
	}
	to, ok := d.route(tx.Dst)
	if !ok {
		d.stats.NoRoute++
		return
	}
	if d.native {
		// The packet goes on the wire as it is: to its outermost
		// destination (the uSID container in SRv6 modes), which the
		// host's routes and the fabric take it along.
		to = netip.AddrPortFrom(netip.AddrFrom16(*wire.OuterDst(pkt)), 0)
	}
	d.stats.TxPackets[tx.Port]++
	d.stats.TxBytes[tx.Port] += uint64(len(pkt))
	k := burstKey{plane: tx.Port, to: to, tc: tx.TrafficClass}
	if d.pool > 1 {
		k.socket = int(tx.EV*0x9E3779B1>>16) % d.pool // spread the EVs over the source ports
	}
	if d.opt.FlowLabels {
		_, k.flow = wire.SplitEV(tx.EV)
	}
	t.add(k, pkt)
}

// burstKey is what the datagrams of one burst share.
type burstKey struct {
	plane, socket int
	to            netip.AddrPort
	tc            uint8
	flow          uint32
}

// txBatch is the driver's transmit scratch: packet slots the endpoint
// writes into, and the bursts they are grouped into.
type txBatch struct {
	slots  [][]byte
	n      int
	bursts []Burst
	keys   []burstKey
	closed []bool // the burst ended with a short datagram
	store  [][][]byte
}

func (t *txBatch) init(mtu int) {
	size := mrc.MaxHeaderLen + mtu + 16
	slab := pages.Mapped(IdealBatchSize * size)
	for i := range IdealBatchSize {
		t.slots = append(t.slots, slab[i*size:(i+1)*size:(i+1)*size])
	}
	t.store = make([][][]byte, IdealBatchSize)
	for i := range t.store {
		t.store[i] = make([][]byte, 0, MaxSegments)
	}
}

func (t *txBatch) reset() {
	t.n = 0
	t.bursts = t.bursts[:0]
	t.keys = t.keys[:0]
	t.closed = t.closed[:0]
}

// add appends pkt to an open burst with key k that it may join, or starts
// one. Reordering packets within a batch is harmless: MRC places every
// packet by its own address.
func (t *txBatch) add(k burstKey, pkt []byte) {
	for i := len(t.bursts) - 1; i >= 0; i-- {
		if t.keys[i] != k || t.closed[i] {
			continue
		}
		b := &t.bursts[i]
		seg := len(b.Segs[0])
		if len(pkt) > seg || len(b.Segs) >= MaxSegments || (len(b.Segs)+1)*seg > MaxBurstBytes {
			continue
		}
		b.Segs = append(b.Segs, pkt)
		if len(pkt) < seg {
			t.closed[i] = true
		}
		return
	}
	i := len(t.bursts)
	t.bursts = append(t.bursts, Burst{Segs: append(t.store[i][:0], pkt), Plane: k.plane, Socket: k.socket, To: k.to, TClass: k.tc, FlowLabel: k.flow})
	t.keys = append(t.keys, k)
	t.closed = append(t.closed, false)
}

// sortBursts orders the bursts by plane and socket, so the Bind makes one
// system call per socket.
func (t *txBatch) sortBursts() {
	b := t.bursts
	for i := 1; i < len(b); i++ {
		for j := i; j > 0 && (b[j].Plane < b[j-1].Plane || b[j].Plane == b[j-1].Plane && b[j].Socket < b[j-1].Socket); j-- {
			b[j], b[j-1] = b[j-1], b[j]
			t.store[j], t.store[j-1] = t.store[j-1], t.store[j]
		}
	}
}

// DriverMemory returns the bytes of buffers a Driver allocates for a Bind
// with receivers receiving sockets, an endpoint MTU of mtu and opt: its
// receive batches and its transmit slots.
func DriverMemory(receivers, mtu int, opt Options) int64 {
	batches := opt.RxBatches
	if batches == 0 {
		batches = 4
	}
	rx := int64(receivers) * int64(batches) * rxBuffers * RecvBufSize
	return rx + IdealBatchSize*int64(mrc.MaxHeaderLen+mtu+16)
}
