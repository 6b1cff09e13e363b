package wire

import "encoding/binary"

// Headers says where the headers of a datagram sit in its buffer, as
// Locate finds them: byte offsets from the start of the buffer.
type Headers struct {
	IP  int // the IPv6 header that carries the UDP header (the inner one when encapsulated)
	SRH int // the (last) segment routing header, or -1
	UDP int // the UDP header
	// BTH is the BTH's offset, or -1 when the buffer ends before a
	// whole BTH.
	BTH int
}

// maxHeaderChain bounds the IPv6, SRH and UDP headers Locate follows.
const maxHeaderChain = 4

// Locate finds the headers of the datagram at the start of b: it follows
// the next-header chain from the outer IPv6 header through SRHs and inner
// IPv6 headers, at most four headers deep, to the UDP header. ok is false
// when b holds no IPv6 header, the chain leaves IPv6/SRH/UDP or is deeper,
// or b ends inside a header of the chain or the UDP header. It reads only
// next-header and length fields: no version, length or port checks (that
// is Decode's work), so it also locates the RoCEv2 baseline's packets. It
// does not allocate.
func Locate(b []byte) (h Headers, ok bool) {
	if len(b) < IPv6Len {
		return h, false
	}
	h.SRH = -1
	nh, next := b[6], IPv6Len
	for range maxHeaderChain {
		switch nh {
		case ProtoUDP:
			if len(b) < next+UDPLen {
				return h, false
			}
			h.UDP, h.BTH = next, next+UDPLen
			if len(b) < h.BTH+BTHLen {
				h.BTH = -1
			}
			return h, true
		case ProtoIPv6:
			if len(b) < next+IPv6Len {
				return h, false
			}
			h.IP, nh, next = next, b[next+6], next+IPv6Len
		case ProtoRouting:
			if len(b) < next+8 {
				return h, false
			}
			h.SRH, nh, next = next, b[next], next+8+8*int(b[next+1])
		default:
			return h, false
		}
	}
	return h, false
}

// EV returns the EV of the located datagram b: the UDP source port and the
// flow label of the IPv6 header that carries UDP (see EV).
func (h *Headers) EV(b []byte) EV {
	fl := binary.BigEndian.Uint32(b[h.IP:]) & FlowLabelMask
	return JoinEV(binary.BigEndian.Uint16(b[h.UDP:]), fl)
}

// Opcode returns the BTH opcode of the located datagram b, and false when
// b holds no whole BTH.
func (h *Headers) Opcode(b []byte) (Opcode, bool) {
	if h.BTH < 0 {
		return 0, false
	}
	return Opcode(b[h.BTH]), true
}

// DestQP returns the BTH destination QP of the located datagram b, and
// false when b holds no whole BTH.
func (h *Headers) DestQP(b []byte) (uint32, bool) {
	if h.BTH < 0 {
		return 0, false
	}
	return get24(b[h.BTH+bthOffDestQP:]), true
}
