package wire

import (
	"encoding/binary"
	"fmt"
)

// IPv6Len is the length of the fixed IPv6 header (RFC 8200 §3).
const IPv6Len = 40

// IPv6 next-header values used by MRC, from IANA (RFC 8200 §4, RFC 2473,
// RFC 8754).
const (
	ProtoUDP     = 17 // UDP (RoCEv2)
	ProtoIPv6    = 41 // IPv6-in-IPv6 encapsulation
	ProtoRouting = 43 // Routing header (SRH when routing type 4)
)

// IPv6 header layout, from the spec (RFC 8200 §3; DSCP/ECN split of the
// traffic class per RFC 2474 and RFC 3168).
const (
	ipv6OffVerTC      = 0  // version b7-4 | traffic class[7:4] b3-0
	ipv6OffTCFlow     = 1  // traffic class[3:0] b7-4 | flow label[19:16] b3-0
	ipv6OffFlow       = 2  // flow label[15:0]
	ipv6OffPayloadLen = 4  // payload length, 16 bits
	ipv6OffNextHeader = 6  // next header
	ipv6OffHopLimit   = 7  // hop limit
	ipv6OffSrc        = 8  // source address, 16 bytes
	ipv6OffDst        = 24 // destination address, 16 bytes

	ipv6Version   = 6
	FlowLabelMask = 1<<20 - 1 // the flow label is 20 bits
	dscpShift     = 2
	ecnMask       = 0x3
)

// ECN is the explicit congestion notification codepoint, the low 2 bits of
// the traffic class (RFC 3168 §5).
type ECN uint8

// ECN codepoints (RFC 3168 §5).
const (
	NotECT ECN = 0 // not ECN-capable
	ECT1   ECN = 1 // ECN-capable, ECT(1)
	ECT0   ECN = 2 // ECN-capable, ECT(0)
	CE     ECN = 3 // congestion experienced
)

// String returns the RFC 3168 name of e.
func (e ECN) String() string {
	switch e {
	case NotECT:
		return "Not-ECT"
	case ECT1:
		return "ECT(1)"
	case ECT0:
		return "ECT(0)"
	case CE:
		return "CE"
	}
	return fmt.Sprintf("ECN(%d)", uint8(e))
}

// IPv6 is the fixed IPv6 header (RFC 8200 §3). The version is always 6.
type IPv6 struct {
	TrafficClass uint8  // DSCP (6 bits) | ECN (2 bits)
	FlowLabel    uint32 // 20 bits; carries EV[15:0] in MRC
	PayloadLen   uint16 // bytes after this header
	NextHeader   uint8
	HopLimit     uint8
	Src, Dst     [16]byte
}

// DSCP returns the differentiated services codepoint (the top 6 bits of
// the traffic class).
func (h *IPv6) DSCP() uint8 { return h.TrafficClass >> dscpShift }

// ECN returns the ECN codepoint.
func (h *IPv6) ECN() ECN { return ECN(h.TrafficClass & ecnMask) }

// SetDSCP sets the DSCP and keeps the ECN bits.
func (h *IPv6) SetDSCP(dscp uint8) {
	h.TrafficClass = dscp<<dscpShift | h.TrafficClass&ecnMask
}

// SetECN sets the ECN codepoint and keeps the DSCP.
func (h *IPv6) SetECN(e ECN) {
	h.TrafficClass = h.TrafficClass&^ecnMask | uint8(e)&ecnMask
}

// Append appends the IPv6Len-byte encoding of h to b.
func (h *IPv6) Append(b []byte) []byte {
	b, w := grow(b, IPv6Len)
	h.put(w)
	return b
}

// put writes the header into w[:IPv6Len].
func (h *IPv6) put(w []byte) {
	w = w[:IPv6Len]
	putVerTCFlow(w, h.TrafficClass, h.FlowLabel)
	binary.BigEndian.PutUint16(w[ipv6OffPayloadLen:], h.PayloadLen)
	w[ipv6OffNextHeader] = h.NextHeader
	w[ipv6OffHopLimit] = h.HopLimit
	copy(w[ipv6OffSrc:], h.Src[:])
	copy(w[ipv6OffDst:], h.Dst[:])
}

// putVerTCFlow writes the version, traffic class and flow label into the
// first 4 bytes of w.
func putVerTCFlow(w []byte, tc uint8, flow uint32) {
	binary.BigEndian.PutUint32(w, ipv6Version<<28|uint32(tc)<<20|flow&FlowLabelMask)
}

// Decode decodes an IPv6 header from the start of b and returns IPv6Len.
// It returns ErrInvalid if the version is not 6.
func (h *IPv6) Decode(b []byte) (int, error) {
	if len(b) < IPv6Len {
		return 0, ErrTruncated
	}
	b = b[:IPv6Len]
	v := binary.BigEndian.Uint32(b)
	if v>>28 != ipv6Version {
		return 0, ErrInvalid
	}
	h.TrafficClass = uint8(v >> 20)
	h.FlowLabel = v & FlowLabelMask
	h.PayloadLen = binary.BigEndian.Uint16(b[ipv6OffPayloadLen:])
	h.NextHeader = b[ipv6OffNextHeader]
	h.HopLimit = b[ipv6OffHopLimit]
	copy(h.Src[:], b[ipv6OffSrc:])
	copy(h.Dst[:], b[ipv6OffDst:])
	return IPv6Len, nil
}

// Raw accessors for switches. They work in place on the outermost IPv6
// header at the start of pkt, at fixed offsets, without decoding the
// packet. They check only that pkt holds IPv6Len bytes: on a shorter
// buffer the getters return zero values (nil for OuterDst) and the setters
// do nothing.

// OuterDst returns a pointer to the destination address of the outermost
// header, aliasing pkt, so a uN switch can shift its uSID container in
// place: USIDFormat.Shift(OuterDst(pkt)).
func OuterDst(pkt []byte) *[16]byte {
	if len(pkt) < IPv6Len {
		return nil
	}
	return (*[16]byte)(pkt[ipv6OffDst:])
}

// OuterTrafficClass returns the traffic class of the outermost header.
func OuterTrafficClass(pkt []byte) uint8 {
	if len(pkt) < IPv6Len {
		return 0
	}
	return pkt[ipv6OffVerTC]<<4 | pkt[ipv6OffTCFlow]>>4
}

// SetOuterTrafficClass sets the traffic class of the outermost header.
func SetOuterTrafficClass(pkt []byte, tc uint8) {
	if len(pkt) < IPv6Len {
		return
	}
	pkt[ipv6OffVerTC] = pkt[ipv6OffVerTC]&0xF0 | tc>>4
	pkt[ipv6OffTCFlow] = pkt[ipv6OffTCFlow]&0x0F | tc<<4
}

// OuterFlowLabel returns the flow label of the outermost header.
func OuterFlowLabel(pkt []byte) uint32 {
	if len(pkt) < IPv6Len {
		return 0
	}
	return binary.BigEndian.Uint32(pkt) & FlowLabelMask
}

// OuterECN returns the ECN codepoint of the outermost header.
func OuterECN(pkt []byte) ECN { return ECN(OuterTrafficClass(pkt) & ecnMask) }

// SetOuterECN sets the ECN codepoint of the outermost header and keeps its
// DSCP.
func SetOuterECN(pkt []byte, e ECN) {
	SetOuterTrafficClass(pkt, OuterTrafficClass(pkt)&^ecnMask|uint8(e)&ecnMask)
}

// SetOuterDSCP sets the DSCP of the outermost header and keeps its ECN.
func SetOuterDSCP(pkt []byte, dscp uint8) {
	SetOuterTrafficClass(pkt, dscp<<dscpShift|OuterTrafficClass(pkt)&ecnMask)
}

// MarkCE marks the outermost header Congestion Experienced, as a switch
// does instead of dropping (RFC 3168 §5). It returns false, leaving the
// packet alone, if the packet is Not-ECT: the switch must drop it instead.
// The decapsulating receiver carries the mark to the inner header
// (DecapECN, Decapsulate).
func MarkCE(pkt []byte) bool {
	if OuterECN(pkt) == NotECT { // also true of a short buffer
		return false
	}
	SetOuterECN(pkt, CE)
	return true
}

// DecHopLimit decrements the hop limit of the outermost header, as a
// router forwarding the packet does (RFC 8200 §3). It returns false,
// leaving the packet alone, if the hop limit is 0 or 1: the packet must
// not be forwarded.
func DecHopLimit(pkt []byte) bool {
	if len(pkt) < IPv6Len || pkt[ipv6OffHopLimit] <= 1 {
		return false
	}
	pkt[ipv6OffHopLimit]--
	return true
}

// DecapECN returns the ECN codepoint the inner header gets when an
// encapsulated packet is decapsulated, in RFC 6040 §4.2 normal mode: CE
// on the outer header is copied in, ECT(1) outer over ECT(0) inner gives
// ECT(1), otherwise the inner codepoint stays. ok is false when the
// packet must be dropped: CE outer over a Not-ECT inner header.
func DecapECN(outer, inner ECN) (e ECN, ok bool) {
	outer &= ecnMask
	inner &= ecnMask
	switch {
	case inner == NotECT:
		return NotECT, outer != CE
	case outer == CE:
		return CE, true
	case outer == ECT1 && inner == ECT0:
		return ECT1, true
	}
	return inner, true
}
