package swnet

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// A Link moves IPv6 packets, from their first IPv6 header on, through one
// port of the switch: an AF_PACKET socket on a network interface
// (OpenPacketLink), or memory (NewPipe) in tests.
type Link interface {
	// Receive blocks until at least one packet arrives, copies up to
	// len(bufs) of them into bufs (one each; a longer packet is
	// dropped and counted, not truncated) and stores their lengths in
	// sizes. After Close it returns net.ErrClosed.
	Receive(bufs [][]byte, sizes []int) (int, error)
	// Send sends pkts and returns how many the link took; a packet it
	// refused (the interface is down, the neighbour unknown) is counted
	// by the caller, and the rest are still sent.
	Send(pkts [][]byte) (int, error)
	// Up reports whether the link has carrier.
	Up() bool
	// Close closes the link; a blocked Receive returns net.ErrClosed.
	Close() error
}

// Pipe is an in-memory link between two switch ports, or between a port
// and a test. Packets sent on one end arrive at the other in order; a
// full queue drops them.
type Pipe struct {
	in     chan []byte
	peer   *Pipe
	closed chan struct{}
	once   sync.Once
	down   *atomic.Bool

	Sent, Dropped atomic.Uint64
}

var _ Link = (*Pipe)(nil)

// NewPipe returns the two ends of an in-memory link that queues up to n
// packets each way.
func NewPipe(n int) (a, b *Pipe) {
	down := &atomic.Bool{}
	a = &Pipe{in: make(chan []byte, n), closed: make(chan struct{}), down: down}
	b = &Pipe{in: make(chan []byte, n), closed: make(chan struct{}), down: down}
	a.peer, b.peer = b, a
	return a, b
}

// SetUp sets the link's carrier, for both ends.
func (p *Pipe) SetUp(up bool) { p.down.Store(!up) }

// Up reports whether the link has carrier.
func (p *Pipe) Up() bool { return !p.down.Load() }

// Receive implements Link.
func (p *Pipe) Receive(bufs [][]byte, sizes []int) (int, error) {
	n := 0
	take := func(pkt []byte) {
		if len(pkt) > len(bufs[n]) {
			return
		}
		sizes[n] = copy(bufs[n], pkt)
		n++
	}
	select {
	case pkt := <-p.in:
		take(pkt)
	case <-p.closed:
		return 0, net.ErrClosed
	}
	for n < len(bufs) {
		select {
		case pkt := <-p.in:
			take(pkt)
		default:
			return n, nil
		}
	}
	return n, nil
}

// Send implements Link.
func (p *Pipe) Send(pkts [][]byte) (int, error) {
	select {
	case <-p.closed:
		return 0, net.ErrClosed
	default:
	}
	if p.down.Load() {
		return 0, errLinkDown
	}
	n := 0
	for _, pkt := range pkts {
		select {
		case p.peer.in <- append([]byte(nil), pkt...):
			p.Sent.Add(1)
			n++
		default:
			p.Dropped.Add(1)
		}
	}
	return n, nil
}

// Close implements Link.
func (p *Pipe) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// SendError reports packets a link refused (an interface that is down, a
// neighbour whose MAC is unknown); the others were sent.
type SendError struct{ Err error }

func (e *SendError) Error() string { return "swnet: send: " + e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

var (
	errLinkDown    = &SendError{Err: errors.New("link down")}
	errNoNeighbour = &SendError{Err: errors.New("neighbour MAC unknown")}
)
