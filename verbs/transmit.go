package verbs

import (
	"fmt"

	"github.com/openmrc/mrc/wire"
)

// PortMask is a set of ports: bit p is port (plane) p.
type PortMask uint32

// AllPorts is the mask of every port.
const AllPorts PortMask = 1<<MaxPlanes - 1

// Transmit describes a packet PollTransmit wrote: where to send it and
// how, so that a host never parses the bytes the transport just encoded.
type Transmit struct {
	Port    int // the port (plane) to send it on
	Len     int // bytes written to the buffer
	WireLen int // length on the wire; larger than Len when the payload is phantom
	QPN     uint32
	Kind    PacketKind

	// Dst is the packet's final destination: the peer port's address,
	// also when the packet is addressed to a uSID container or wrapped in
	// an outer SRv6 header (wire.Packet.Final).
	Dst [16]byte
	// EV is the packet's entropy value (UDP source port and flow label).
	EV wire.EV
	// TrafficClass is DSCP<<2 | ECN of its IPv6 header (every one, when
	// encapsulated).
	TrafficClass uint8

	// Padding to 64 bytes. Go copies a record this size in 16-byte moves;
	// at a size that is not a multiple of 16 the last two overlap, and
	// the second copy of a returned record (every host makes one) stalls
	// on store forwarding.
	_ [8]byte
}

// Addressed returns t with Dst set to final and EV and TrafficClass taken
// from ip and udp, the (inner) IPv6 and UDP headers the transport has just
// encoded.
func (t Transmit) Addressed(final [16]byte, ip *wire.IPv6, udp *wire.UDP) Transmit {
	t.Address(final, ip, udp)
	return t
}

// Address sets t's Dst to final and its EV and TrafficClass from ip and
// udp, as Addressed does, in place: a transport that fills a Transmit its
// host passed in copies nothing.
func (t *Transmit) Address(final [16]byte, ip *wire.IPv6, udp *wire.UDP) {
	t.Dst, t.EV, t.TrafficClass = final, wire.JoinEV(udp.SrcPort, ip.FlowLabel), ip.TrafficClass
}

// PacketKind classifies transmitted packets for hosts that keep statistics.
type PacketKind uint8

const (
	KindData PacketKind = iota
	KindRetransmit
	KindSACK
	KindNACK
	KindProbe
	KindEndpoint
)

var kindNames = [...]string{"data", "retransmit", "sack", "nack", "probe", "endpoint"}

func (k PacketKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("PacketKind(%d)", uint8(k))
}

// MaxPlanes is the largest number of ports (planes) an endpoint may have;
// an EV names its plane in 4 bits (wire.EV.Plane).
const MaxPlanes = wire.MaxEVPlanes
