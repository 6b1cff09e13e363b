package udpio

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// StdConfig configures a StdBind. Zero fields take the defaults in their
// comments.
type StdConfig struct {
	// Planes holds the local address of each plane's primary socket, the
	// one peers send to. Port 0 picks a free port. IPv6 and IPv4 may mix.
	Planes []netip.AddrPort
	// SourcePorts is the number of sockets per plane (default 1). Sends
	// pick one by Burst.Socket, so a pool gives a connection as many UDP
	// source ports, which ECMP fabrics hash on; the extra sockets are
	// bound to free ports on the plane's address and only send.
	SourcePorts int
	// FlowLabels lets Bursts set the IPv6 flow label per packet
	// (IPV6_FLOWINFO_SEND). Open fails if the kernel refuses it.
	FlowLabels bool
	// NoGSO and NoGRO turn off UDP segmentation and receive offload;
	// otherwise they are used where the kernel has them.
	NoGSO, NoGRO bool
	// RecvBuffer and SendBuffer are the socket buffer sizes in bytes
	// (defaults 16 MiB and 4 MiB). As root they may exceed the sysctl
	// limits (SO_RCVBUFFORCE); otherwise the kernel caps them.
	RecvBuffer, SendBuffer int
}

// BindStats counts what a StdBind did. Counters only grow.
type BindStats struct {
	Sent          uint64 // datagrams handed to the kernel
	SendCalls     uint64 // sendmmsg (or sendmsg) system calls
	SendDrops     uint64 // datagrams the kernel refused (counted, not sent)
	Received      uint64 // datagrams received, after GRO splitting
	RecvCalls     uint64 // recvmmsg (or recvmsg) system calls that returned data
	Coalesced     uint64 // received buffers that held more than one datagram
	RecvOverflows uint64 // datagrams the kernel dropped because a receive buffer was full (SO_RXQ_OVFL)
}

type bindCounters struct {
	sent, sendCalls, sendDrops, received, recvCalls, coalesced atomic.Uint64
	overflows                                                  []atomic.Uint64 // per plane: the latest SO_RXQ_OVFL count
}

func (c *bindCounters) snapshot() BindStats {
	s := BindStats{
		Sent: c.sent.Load(), SendCalls: c.sendCalls.Load(), SendDrops: c.sendDrops.Load(),
		Received: c.received.Load(), RecvCalls: c.recvCalls.Load(), Coalesced: c.coalesced.Load(),
	}
	for i := range c.overflows {
		s.RecvOverflows += c.overflows[i].Load()
	}
	return s
}

// StdBind is the Bind over the operating system's UDP sockets. On Linux it
// uses recvmmsg/sendmmsg, UDP GSO and GRO, per-packet traffic class and
// flow label, and reports the received traffic class and flow label;
// elsewhere it sends and receives one plain datagram at a time.
type StdBind struct {
	cfg    StdConfig
	mu     sync.Mutex // guards state changes and serialises Send
	state  int        // 0 new, 1 open, 2 closed
	planes [][]*stdSocket
	polls  []ReceiveFunc // non-blocking receive, per plane (Linux)
	local  []netip.AddrPort
	gso    atomic.Bool // UDP GSO usable
	gro    bool
	stats  bindCounters
}

var _ PollBind = (*StdBind)(nil)

// NewStdBind returns a Bind for cfg; Open creates its sockets.
func NewStdBind(cfg StdConfig) (*StdBind, error) {
	if len(cfg.Planes) == 0 {
		return nil, fmt.Errorf("udpio: no planes")
	}
	if cfg.SourcePorts == 0 {
		cfg.SourcePorts = 1
	}
	if cfg.SourcePorts < 1 || cfg.SourcePorts > 1024 {
		return nil, fmt.Errorf("udpio: %d source ports per plane, want 1..1024", cfg.SourcePorts)
	}
	if cfg.RecvBuffer == 0 {
		cfg.RecvBuffer = 16 << 20
	}
	if cfg.SendBuffer == 0 {
		cfg.SendBuffer = 4 << 20
	}
	for i, a := range cfg.Planes {
		if !a.IsValid() || a.Addr().Is4In6() {
			return nil, fmt.Errorf("udpio: plane %d: bad address %v", i, a)
		}
	}
	b := &StdBind{cfg: cfg}
	b.stats.overflows = make([]atomic.Uint64, len(cfg.Planes))
	return b, nil
}

// Planes returns the number of planes.
func (b *StdBind) Planes() int { return len(b.cfg.Planes) }

// SourcePorts returns the sockets per plane.
func (b *StdBind) SourcePorts() int { return b.cfg.SourcePorts }

// BatchSize returns IdealBatchSize.
func (b *StdBind) BatchSize() int { return IdealBatchSize }

// LocalAddr returns the address of plane's primary socket.
func (b *StdBind) LocalAddr(plane int) netip.AddrPort {
	b.mu.Lock()
	defer b.mu.Unlock()
	if plane < 0 || plane >= len(b.local) {
		return netip.AddrPort{}
	}
	return b.local[plane]
}

// Stats returns the bind's counters.
func (b *StdBind) Stats() BindStats { return b.stats.snapshot() }

// Offloads reports whether UDP GSO and GRO are in use.
func (b *StdBind) Offloads() (gso, gro bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gso.Load(), b.gro
}

// Open binds every socket.
func (b *StdBind) Open() ([]ReceiveFunc, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != 0 {
		return nil, ErrBindOpen
	}
	b.planes = make([][]*stdSocket, len(b.cfg.Planes))
	b.local = make([]netip.AddrPort, len(b.cfg.Planes))
	b.gso.Store(!b.cfg.NoGSO)
	b.gro = !b.cfg.NoGRO
	fail := func(err error) ([]ReceiveFunc, error) {
		b.closeLocked()
		return nil, err
	}
	var fns []ReceiveFunc
	for p, addr := range b.cfg.Planes {
		for i := range b.cfg.SourcePorts {
			a := addr
			if i > 0 {
				a = netip.AddrPortFrom(addr.Addr(), 0)
			}
			s, err := b.openSocket(p, a, i == 0)
			if err != nil {
				return fail(fmt.Errorf("udpio: plane %d: %w", p, err))
			}
			b.planes[p] = append(b.planes[p], s)
		}
		b.local[p] = b.planes[p][0].local
		fns = append(fns, b.receiveFunc(p, b.planes[p][0]))
		if pf := b.pollFunc(p, b.planes[p][0]); pf != nil {
			b.polls = append(b.polls, pf)
		}
	}
	b.state = 1
	return fns, nil
}

// PollFuncs returns the non-blocking twins of the ReceiveFuncs Open
// returned (Linux), or nil where the platform has none.
func (b *StdBind) PollFuncs() []ReceiveFunc {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.polls) != len(b.planes) {
		return nil
	}
	return b.polls
}

// Close closes every socket.
func (b *StdBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closeLocked()
	return nil
}

func (b *StdBind) closeLocked() {
	b.state = 2
	for _, socks := range b.planes {
		for _, s := range socks {
			s.conn.Close()
		}
	}
}

// socket returns the socket a burst goes out of, or nil.
func (b *StdBind) socket(bu *Burst) *stdSocket {
	if bu.Plane < 0 || bu.Plane >= len(b.planes) {
		return nil
	}
	socks := b.planes[bu.Plane]
	i := bu.Socket % len(socks)
	if i < 0 {
		i += len(socks)
	}
	return socks[i]
}

// Send sends bursts, grouping consecutive bursts of one socket into one
// system call where the platform allows.
func (b *StdBind) Send(bursts []Burst) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != 1 {
		return ErrBindClosed
	}
	for i := 0; i < len(bursts); {
		s := b.socket(&bursts[i])
		if s == nil {
			b.stats.sendDrops.Add(uint64(len(bursts[i].Segs)))
			i++
			continue
		}
		j := i + 1
		for j < len(bursts) && b.socket(&bursts[j]) == s {
			j++
		}
		if err := b.sendSocket(s, bursts[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// stdSocket is one bound UDP socket.
type stdSocket struct {
	conn  *net.UDPConn
	local netip.AddrPort
	v4    bool
	plane int
	sys   stdSockSys // platform part
}

// listenStd binds a UDP socket to a (udp4 for an IPv4 address, else
// udp6) for plane; its local address is unmapped.
func listenStd(plane int, a netip.AddrPort) (*stdSocket, error) {
	network := "udp6"
	v4 := a.Addr().Is4()
	if v4 {
		network = "udp4"
	}
	conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(a))
	if err != nil {
		return nil, err
	}
	la := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	return &stdSocket{conn: conn, local: netip.AddrPortFrom(la.Addr().Unmap(), la.Port()), v4: v4, plane: plane}, nil
}
