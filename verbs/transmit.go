package verbs

import (
	"fmt"

	"github.com/openmrc/mrc/wire"
)

// PortMask is a set of ports: bit p is port (plane) p.
type PortMask uint32

// AllPorts is the mask of every port.
const AllPorts PortMask = 1<<MaxPlanes - 1

// Transmit describes a packet PollTransmit wrote.
type Transmit struct {
	Port    int // the port (plane) to send it on
	Len     int // bytes written to the buffer
	WireLen int // length on the wire; larger than Len when the payload is phantom
	QPN     uint32
	Kind    PacketKind
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
