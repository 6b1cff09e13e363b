package udpio

import (
	"errors"
	"net/netip"
)

// Implementation constants.
const (
	// IdealBatchSize is the number of datagrams a Bind moves per system
	// call when it can: recvmmsg/sendmmsg vector length.
	IdealBatchSize = 64
	// MaxSegments is the most datagrams one Burst may hold, and the most a
	// received buffer may be split into (the kernel's UDP GSO limit is 64
	// on older kernels and 128 on newer ones).
	MaxSegments = 64
	// MaxBurstBytes bounds the bytes of one Burst: a GSO send is one UDP
	// datagram to the kernel and must fit its 16-bit length.
	MaxBurstBytes = 65000
	// RecvBufSize is the buffer size a ReceiveFunc needs for each slot of
	// its batch: a whole coalesced (GRO) datagram.
	RecvBufSize = 1 << 16
)

// Errors.
var (
	// ErrBindOpen: Open was called on a Bind that is already open.
	ErrBindOpen = errors.New("udpio: bind already open")
	// ErrBindClosed: Send on a Bind that is not open.
	ErrBindClosed = errors.New("udpio: bind closed")
	// ErrDriverClosed: a call on a Driver after Close.
	ErrDriverClosed = errors.New("udpio: driver closed")
)

// Datagram is one received UDP datagram.
type Datagram struct {
	// Buf holds the UDP payload. It aliases one of the buffers passed to
	// the ReceiveFunc, and is valid until that buffer is reused; several
	// Datagrams may alias one buffer (a GRO batch split into its
	// segments).
	Buf []byte
	// Plane is the local plane (NIC port) that received it.
	Plane int
	// From is the sender's socket address.
	From netip.AddrPort
	// TClass is the traffic class (DSCP<<2 | ECN) of the packet as it
	// arrived, or 0 if the Bind cannot tell.
	TClass uint8
	// FlowLabel is the IPv6 flow label the packet arrived with, valid
	// when HasFlowLabel.
	FlowLabel    uint32
	HasFlowLabel bool
}

// Burst is a run of datagrams sent together: one system call, and one UDP
// GSO super-datagram when the Bind supports it. Every datagram of a burst
// has the same destination, socket, traffic class and flow label.
type Burst struct {
	// Segs are the datagrams (UDP payloads), at most MaxSegments and
	// MaxBurstBytes in all. Every one but the last has the same length,
	// and the last is no longer. The Bind reads them during Send only.
	Segs [][]byte
	// Plane is the local plane to send from.
	Plane int
	// Socket picks one of the plane's sockets, 0 ≤ Socket <
	// SourcePorts(): its source port, when the Bind has a pool of them
	// (the EV→source-port mapping).
	Socket int
	// To is the destination socket address.
	To netip.AddrPort
	// TClass is the traffic class (DSCP<<2 | ECN) to send with.
	TClass uint8
	// FlowLabel is the IPv6 flow label to send with; 0 lets the kernel
	// choose. IPv4 destinations ignore it.
	FlowLabel uint32
}

// Len returns the bytes in the burst.
func (b *Burst) Len() int {
	n := 0
	for _, s := range b.Segs {
		n += len(s)
	}
	return n
}

// A ReceiveFunc receives datagrams from one socket. It blocks until at
// least one datagram arrives, fills each of bufs (each RecvBufSize bytes,
// at most the Bind's BatchSize of them) with at most one system-level
// datagram, splits coalesced datagrams into their segments, and describes
// them in dgs[:n]. len(dgs) must be at least len(bufs)*MaxSegments. The
// caller owns bufs and dgs; the Datagrams alias bufs.
//
// After the Bind is closed, a ReceiveFunc returns net.ErrClosed (perhaps
// wrapped). Each ReceiveFunc must be called from one goroutine at a time;
// different ReceiveFuncs may run concurrently with each other and with
// Send.
type ReceiveFunc func(bufs [][]byte, dgs []Datagram) (n int, err error)

// Bind is the datapath's socket layer: a set of UDP sockets, one or more
// per plane, that send and receive batches of datagrams. It is the seam
// tests replace with in-memory channels (package udpiotest); the Driver
// needs nothing else.
//
// A Bind is opened once and closed once; Open after Close is an error.
// Send may be called from several goroutines; each ReceiveFunc from one.
type Bind interface {
	// Open creates the sockets and returns one ReceiveFunc per receiving
	// socket. Errors name the address and the cause (address in use,
	// permission denied).
	Open() ([]ReceiveFunc, error)
	// Close closes every socket. Blocked ReceiveFuncs return
	// net.ErrClosed; later Sends return ErrBindClosed. Close is
	// idempotent.
	Close() error
	// Send sends every datagram of bursts, blocking while the sockets'
	// send buffers are full. It does not retain bursts or their buffers.
	// A datagram that cannot be sent (no route, message too long) is
	// counted and dropped, not reported: like a NIC, the Bind does not
	// fail a batch for one bad packet. It returns an error only when the
	// Bind is closed or broken.
	Send(bursts []Burst) error
	// BatchSize is the most buffers a ReceiveFunc fills per call and the
	// number of bursts Send moves per system call.
	BatchSize() int
	// Planes is the number of planes.
	Planes() int
	// SourcePorts is the number of sockets (source ports) each plane
	// sends from.
	SourcePorts() int
	// LocalAddr returns the address plane's primary socket is bound to,
	// the one peers send to. Valid after Open.
	LocalAddr(plane int) netip.AddrPort
}

// A PollBind is a Bind that can also read its sockets without blocking.
// The Driver uses it before it fires a due timer: a process that was
// descheduled wakes up with its timers overdue and its sockets full, and
// the SACKs waiting there must reach the endpoint before its loss timers
// declare the packets they acknowledge lost.
type PollBind interface {
	Bind
	// PollFuncs returns, after Open, one function per ReceiveFunc (in the
	// same order) that receives like it but never blocks: it returns
	// n == 0 and a nil error at once when nothing is waiting. A poll
	// function may run concurrently with its socket's ReceiveFunc, not
	// with itself.
	PollFuncs() []ReceiveFunc
}

// A NativeFramer is a Bind that puts the core's datagrams on the wire as
// they are, each one a whole IPv6 packet (NativeBind), rather than inside
// a UDP datagram between two sockets. The Driver then sends each packet
// to its outermost destination (Burst.To holds it, port 0) and expects
// received Datagrams to hold whole core datagrams, IPv6 header first, as
// before.
type NativeFramer interface {
	Bind
	NativeFraming() bool
}
