package udpio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/openmrc/mrc/wire"
)

// NativeConfig configures a NativeBind. Zero fields take the defaults in
// their comments.
type NativeConfig struct {
	// Planes holds each plane's NIC address: the endpoint's port address
	// (mrc.Config.Ports), which the host must own and to which the
	// fabric delivers the packets of that plane (after decapsulation, in
	// SRv6 mode). IPv6 only.
	Planes []netip.Addr
	// Port is the UDP port packets arrive on (default 4791, RoCEv2's).
	Port uint16
	// Devices optionally names, plane by plane, the interface the plane's
	// packets must leave through (SO_BINDTODEVICE). Empty entries, or no
	// Devices, leave the choice to the routing table.
	Devices []string
	// RecvBuffer and SendBuffer are the socket buffer sizes in bytes
	// (defaults 16 MiB and 4 MiB), forced past the sysctl limits when the
	// process may.
	RecvBuffer, SendBuffer int
}

// NativeBind is the Bind of native framing: it puts each datagram the
// core writes on the wire exactly as written, from its first IPv6 header
// on, through a raw IPv6 socket (IPPROTO_RAW, which implies
// IPV6_HDRINCL), and receives the core's UDP datagrams on an ordinary UDP
// socket bound to the plane's address and port 4791, after the host's
// kernel has delivered them (and, in SRv6 mode, decapsulated them with
// End.DT6). Raw sockets need CAP_NET_RAW. Linux only.
//
// A received datagram comes without its IPv6 and UDP headers, so the
// Bind writes them back in front of the payload from what the socket
// reports: the source address and port (the EV's upper half), the
// plane's address and port, the flow label and traffic class
// (IPV6_FLOWINFO, IPV6_TCLASS) and the hop limit (IPV6_HOPLIMIT); it
// computes the UDP checksum afresh over the rebuilt header, which the
// kernel has already checked against the same pseudo-header, so the
// core's checksum and ICRC checks pass exactly when the packet arrived
// as sent. docs/udpio.md explains what is and is not preserved.
//
// There is no GSO (a raw socket sends one packet per message) and no GRO
// (each rebuilt datagram needs room for its headers); batches still use
// sendmmsg and recvmmsg. The Driver recognises the Bind as a
// NativeFramer and addresses each Burst to its packets' outermost
// destination.
type NativeBind struct {
	cfg    NativeConfig
	mu     sync.Mutex // guards state changes and serialises Send
	state  int        // 0 new, 1 open, 2 closed
	planes []*nativePlane
	polls  []ReceiveFunc
	stats  bindCounters

	lastErr atomic.Value // error: the latest datagram the kernel refused
}

var (
	_ PollBind     = (*NativeBind)(nil)
	_ NativeFramer = (*NativeBind)(nil)
)

// nativeHeadroom is the room a received payload leaves in front of it for
// the rebuilt IPv6 and UDP headers.
const nativeHeadroom = wire.IPv6Len + wire.UDPLen

// NewNativeBind returns a native Bind for cfg; Open creates its sockets.
func NewNativeBind(cfg NativeConfig) (*NativeBind, error) {
	if len(cfg.Planes) == 0 {
		return nil, fmt.Errorf("udpio: no planes")
	}
	if cfg.Port == 0 {
		cfg.Port = wire.UDPPortRoCEv2
	}
	if cfg.RecvBuffer == 0 {
		cfg.RecvBuffer = 16 << 20
	}
	if cfg.SendBuffer == 0 {
		cfg.SendBuffer = 4 << 20
	}
	if len(cfg.Devices) > len(cfg.Planes) {
		return nil, fmt.Errorf("udpio: %d devices for %d planes", len(cfg.Devices), len(cfg.Planes))
	}
	for i, a := range cfg.Planes {
		if !a.Is6() || a.Is4In6() || a.IsUnspecified() || a.IsMulticast() {
			return nil, fmt.Errorf("udpio: plane %d: native framing needs a unicast IPv6 address, not %v", i, a)
		}
	}
	b := &NativeBind{cfg: cfg}
	b.stats.overflows = make([]atomic.Uint64, len(cfg.Planes))
	return b, nil
}

// NativeFraming reports true: the Bind carries the core's datagrams as
// they are.
func (b *NativeBind) NativeFraming() bool { return true }

// Planes returns the number of planes.
func (b *NativeBind) Planes() int { return len(b.cfg.Planes) }

// SourcePorts returns 1: the source port of each packet is the core's
// own (its EV), written in the packet.
func (b *NativeBind) SourcePorts() int { return 1 }

// BatchSize returns IdealBatchSize.
func (b *NativeBind) BatchSize() int { return IdealBatchSize }

// LocalAddr returns plane's address and the UDP port it receives on.
func (b *NativeBind) LocalAddr(plane int) netip.AddrPort {
	if plane < 0 || plane >= len(b.cfg.Planes) {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(b.cfg.Planes[plane], b.cfg.Port)
}

// Stats returns the bind's counters.
func (b *NativeBind) Stats() BindStats { return b.stats.snapshot() }

// LastSendError returns the latest error the kernel gave for a datagram
// it refused (BindStats.SendDrops), or nil: "message too long" says a
// link's MTU is smaller than the core's packets, "network is
// unreachable" that no route takes the outer destination.
func (b *NativeBind) LastSendError() error {
	if e, ok := b.lastErr.Load().(error); ok {
		return e
	}
	return nil
}

// PollFuncs returns the non-blocking twins of the ReceiveFuncs.
func (b *NativeBind) PollFuncs() []ReceiveFunc {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.polls
}

// Close closes every socket.
func (b *NativeBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closeLocked()
	return nil
}

func (b *NativeBind) closeLocked() {
	b.state = 2
	for _, p := range b.planes {
		p.close()
	}
}

// Send sends every packet of bursts through its plane's raw socket, to
// its destination address.
func (b *NativeBind) Send(bursts []Burst) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != 1 {
		return ErrBindClosed
	}
	for i := 0; i < len(bursts); {
		pl := bursts[i].Plane
		if pl < 0 || pl >= len(b.planes) {
			b.stats.sendDrops.Add(uint64(len(bursts[i].Segs)))
			i++
			continue
		}
		j := i + 1
		for j < len(bursts) && bursts[j].Plane == pl {
			j++
		}
		if err := b.sendPlane(b.planes[pl], bursts[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// rebuildHeaders writes, in front of the UDP payload that fills
// pkt[nativeHeadroom:], the IPv6 and UDP headers the packet had when it
// reached the host, with a fresh UDP checksum.
func rebuildHeaders(pkt []byte, src, dst netip.AddrPort, tclass uint8, flow uint32, hopLimit uint8) {
	udpLen := len(pkt) - wire.IPv6Len
	ip := wire.IPv6{TrafficClass: tclass, FlowLabel: flow & wire.FlowLabelMask, PayloadLen: uint16(udpLen),
		NextHeader: wire.ProtoUDP, HopLimit: hopLimit, Src: src.Addr().As16(), Dst: dst.Addr().As16()}
	ip.Append(pkt[:0])
	u := wire.UDP{SrcPort: src.Port(), DstPort: dst.Port(), Length: uint16(udpLen)}
	u.Append(pkt[wire.IPv6Len:wire.IPv6Len])
	u.Checksum = wire.UDPChecksum(ip.Src, ip.Dst, pkt[wire.IPv6Len:])
	u.Append(pkt[wire.IPv6Len:wire.IPv6Len])
}

// CheckNative reports whether native framing can run here with the NIC
// port addresses ports, before any traffic: whether the process may open
// a raw IPv6 socket (CAP_NET_RAW), and whether the host owns each address
// (a UDP socket can bind it). Tools call it to fail at once, with one
// clear line, rather than when a session starts.
func CheckNative(ports []netip.Addr) error {
	if err := checkRaw(); err != nil {
		return err
	}
	for i, a := range ports {
		c, err := net.ListenUDP("udp6", net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
		if err != nil {
			return fmt.Errorf("native framing: plane %d address %v is not on this host: %w", i, a, errors.Unwrap(err))
		}
		c.Close()
	}
	return nil
}
