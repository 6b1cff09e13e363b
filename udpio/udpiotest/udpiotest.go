// Package udpiotest provides in-memory Binds for testing the udpio
// datapath without sockets: NewChannelBinds returns two Binds cross-wired
// plane by plane, like two hosts joined by one link per plane.
package udpiotest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/openmrc/mrc/udpio"
)

// Config shapes the links between the two Binds.
type Config struct {
	Planes int // planes (links); default 1
	// Loss is the probability that a datagram is dropped on the link.
	Loss float64
	// Seed drives the loss.
	Seed uint64
	// QueueLen is the datagrams a link holds before it tail-drops
	// (default 4096).
	QueueLen int
	// CE is the probability that an ECN-capable datagram arrives marked
	// Congestion Experienced.
	CE float64
	// GRO makes the receive functions pack datagrams back to back into
	// their buffers (up to udpio.MaxSegments each), as UDP GRO does, so
	// that one call returns as many datagrams as are waiting, up to a
	// thousand.
	GRO bool
}

// ChannelBind is one side of an in-memory link pair. Its plane p's
// address is [fd00:7e57::s:p]:4791+p for side s (0 or 1). Datagrams sent
// to any other address are dropped.
type ChannelBind struct {
	side  int
	cfg   Config
	peer  *ChannelBind
	links []chan packet // received by this side, per plane

	mu     sync.Mutex
	state  int
	closed chan struct{}
	rng    *rand.Rand
	gate   chan struct{} // non-nil while Hold holds the ReceiveFuncs

	// Counters.
	Sent, Dropped, Delivered atomic.Uint64
}

var _ udpio.PollBind = (*ChannelBind)(nil)

type packet struct {
	buf  []byte
	from netip.AddrPort
	tc   uint8
	flow uint32
}

// NewChannelBinds returns two Binds wired to each other.
func NewChannelBinds(cfg Config) (a, b *ChannelBind) {
	if cfg.Planes == 0 {
		cfg.Planes = 1
	}
	if cfg.QueueLen == 0 {
		cfg.QueueLen = 4096
	}
	mk := func(side int) *ChannelBind {
		c := &ChannelBind{side: side, cfg: cfg, closed: make(chan struct{}),
			rng: rand.New(rand.NewPCG(cfg.Seed, uint64(side)))}
		for range cfg.Planes {
			c.links = append(c.links, make(chan packet, cfg.QueueLen))
		}
		return c
	}
	a, b = mk(0), mk(1)
	a.peer, b.peer = b, a
	return a, b
}

// Addr returns the socket address of plane p of side s.
func Addr(side, plane int) netip.AddrPort {
	ip := netip.AddrFrom16([16]byte{0xfd, 0x00, 0x7e, 0x57, 14: byte(side), 15: byte(plane)})
	return netip.AddrPortFrom(ip, uint16(4791+plane))
}

// Open returns one ReceiveFunc per plane.
func (c *ChannelBind) Open() ([]udpio.ReceiveFunc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != 0 {
		return nil, udpio.ErrBindOpen
	}
	c.state = 1
	fns := make([]udpio.ReceiveFunc, c.cfg.Planes)
	for p := range fns {
		fns[p] = c.receiveFunc(p)
	}
	return fns, nil
}

// Hold stops the blocking ReceiveFuncs from handing out anything until
// Release, as if the receiving goroutines were descheduled: datagrams
// wait on the link, where only the poll functions (PollFuncs) reach them.
func (c *ChannelBind) Hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gate == nil {
		c.gate = make(chan struct{})
	}
}

// Release ends Hold.
func (c *ChannelBind) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gate != nil {
		close(c.gate)
		c.gate = nil
	}
}

// wait blocks while the bind is held; false means it was closed.
func (c *ChannelBind) wait() bool {
	c.mu.Lock()
	g := c.gate
	c.mu.Unlock()
	if g == nil {
		return true
	}
	select {
	case <-g:
		return true
	case <-c.closed:
		return false
	}
}

// PollFuncs returns one non-blocking receive per plane, which Hold does
// not stop.
func (c *ChannelBind) PollFuncs() []udpio.ReceiveFunc {
	fns := make([]udpio.ReceiveFunc, c.cfg.Planes)
	for p := range fns {
		fns[p] = c.pollFunc(p)
	}
	return fns
}

func (c *ChannelBind) pollFunc(plane int) udpio.ReceiveFunc {
	return func(bufs [][]byte, dgs []udpio.Datagram) (int, error) {
		pk := c.newPacker(plane, bufs, dgs)
		for pk.room() {
			select {
			case p := <-c.links[plane]:
				pk.take(p)
			case <-c.closed:
				return 0, net.ErrClosed
			default:
				return pk.done(), nil
			}
		}
		return pk.done(), nil
	}
}

func (c *ChannelBind) receiveFunc(plane int) udpio.ReceiveFunc {
	return func(bufs [][]byte, dgs []udpio.Datagram) (int, error) {
		if len(bufs) == 0 || len(dgs) == 0 {
			return 0, fmt.Errorf("udpiotest: empty batch")
		}
		pk := c.newPacker(plane, bufs, dgs)
		if !c.wait() {
			return 0, net.ErrClosed
		}
		select {
		case p := <-c.links[plane]:
			pk.take(p)
		case <-c.closed:
			return 0, net.ErrClosed
		}
		// A Hold that began while this call waited holds what it took.
		if !c.wait() {
			return 0, net.ErrClosed
		}
		for pk.room() {
			select {
			case p := <-c.links[plane]:
				pk.take(p)
			default:
				return pk.done(), nil
			}
		}
		return pk.done(), nil
	}
}

// packer fills one receive call's buffers: a datagram per buffer, or with
// Config.GRO back to back.
type packer struct {
	c     *ChannelBind
	plane int
	bufs  [][]byte
	dgs   []udpio.Datagram
	n     int // datagrams taken
	buf   int // buffer being filled
	off   int // bytes used in it
	segs  int // datagrams in it
}

// maxDatagram bounds what a link carries: an MTU of 9000 and MRC's headers.
const maxDatagram = 9216 + 512

func (c *ChannelBind) newPacker(plane int, bufs [][]byte, dgs []udpio.Datagram) *packer {
	return &packer{c: c, plane: plane, bufs: bufs, dgs: dgs}
}

// room reports whether another datagram fits.
func (p *packer) room() bool {
	if p.n >= len(p.dgs) {
		return false
	}
	if !p.c.cfg.GRO {
		return p.n < len(p.bufs)
	}
	fits := p.segs < udpio.MaxSegments && p.off+maxDatagram <= len(p.bufs[p.buf])
	return fits || p.buf+1 < len(p.bufs)
}

func (p *packer) take(pk packet) {
	if p.c.cfg.GRO {
		if p.segs == udpio.MaxSegments || p.off+len(pk.buf) > len(p.bufs[p.buf]) {
			p.buf, p.off, p.segs = p.buf+1, 0, 0
		}
	} else {
		p.buf, p.off = p.n, 0
	}
	b := p.bufs[p.buf][p.off:]
	m := copy(b, pk.buf)
	p.dgs[p.n] = udpio.Datagram{Buf: b[:m:m], Plane: p.plane, From: pk.from, TClass: pk.tc, FlowLabel: pk.flow, HasFlowLabel: true}
	p.n++
	p.off += m
	p.segs++
}

func (p *packer) done() int {
	p.c.Delivered.Add(uint64(p.n))
	return p.n
}

// Queued returns the datagrams waiting on plane's link into this side.
func (c *ChannelBind) Queued(plane int) int { return len(c.links[plane]) }

// Close closes the bind; its ReceiveFuncs return net.ErrClosed.
func (c *ChannelBind) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != 2 {
		c.state = 2
		close(c.closed)
	}
	return nil
}

// Send copies each datagram onto the link of its plane, dropping it with
// probability Loss, when the link is full, or when it is not addressed to
// the peer's plane.
func (c *ChannelBind) Send(bursts []udpio.Burst) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != 1 {
		return udpio.ErrBindClosed
	}
	for i := range bursts {
		b := &bursts[i]
		for _, seg := range b.Segs {
			c.Sent.Add(1)
			if b.Plane < 0 || b.Plane >= c.cfg.Planes || b.To != Addr(1-c.side, b.Plane) ||
				c.cfg.Loss > 0 && c.rng.Float64() < c.cfg.Loss {
				c.Dropped.Add(1)
				continue
			}
			tc := b.TClass
			if tc&3 != 0 && c.cfg.CE > 0 && c.rng.Float64() < c.cfg.CE {
				tc |= 3
			}
			select {
			case c.peer.links[b.Plane] <- packet{buf: append([]byte(nil), seg...), from: Addr(c.side, b.Plane), tc: tc, flow: b.FlowLabel}:
			default:
				c.Dropped.Add(1)
			}
		}
	}
	return nil
}

// SourcePorts returns 1.
func (c *ChannelBind) SourcePorts() int { return 1 }

// BatchSize returns udpio.IdealBatchSize.
func (c *ChannelBind) BatchSize() int { return udpio.IdealBatchSize }

// Planes returns the number of planes.
func (c *ChannelBind) Planes() int { return c.cfg.Planes }

// LocalAddr returns Addr(side, plane).
func (c *ChannelBind) LocalAddr(plane int) netip.AddrPort { return Addr(c.side, plane) }
