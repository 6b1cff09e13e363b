package wire

import (
	"encoding/binary"
	"fmt"
)

// Lengths of the endpoint request and response headers.
const (
	ERTHLen = 16
	EETHLen = 36
)

// ERTH layout, from the spec (digest §3.2 [S]). Bytes 0-1 are the common
// type/next_hdr prefix (see putTypeNext); bytes 12-15 have the TSETH
// layout.
const (
	erthOffFlags  = 1  // next_hdr[0] b7 | resv b6-2 | op b1-0
	erthOffResv2  = 2  // reserved byte
	erthOffVendor = 3  // vendor_info
	erthOffMask   = 4  // port_status_mask, 32 bits
	erthOffResv8  = 8  // reserved, 32 bits
	erthOffTS     = 12 // tx_timestamp 16 | tsr 1 | resv 11 | ftype 4
	erthOpMask    = 0x03
	erthResv1Mask = 0x7C
)

// EETH layout. From the spec (digest §3.2 [S]): the prefix, op, six
// reserved 32-bit words at bytes 4-27, tx_timestamp at 28-29. Our choices
// (the public material is silent): op sits in byte 1 b1-0, where the ERTH
// has it; bytes 4-7 carry the responder's port_status_mask (information
// only: nothing is matched or decided on it); bytes 8-27 and 30-35 stay
// reserved. A response is matched to its request by the echoed
// tx_timestamp alone.
const (
	eethOffFlags     = 1  // next_hdr[0] b7 | resv b6-2 | op b1-0 (as in the ERTH)
	eethOffResv2     = 2  // reserved, 16 bits
	eethOffMask      = 4  // our choice: port_status_mask, 32 bits
	eethOffResv8     = 8  // reserved, 20 bytes
	eethOffTimestamp = 28 // tx_timestamp echoed from the request, 16 bits
	eethOffResv30    = 30 // reserved, 6 bytes
	eethOpMask       = 0x03
	eethResv1Mask    = 0x7C
)

// EndpointOp is the operation of an endpoint request or response.
type EndpointOp uint8

// Endpoint operations, from the spec (digest §3.2 [S], on-wire values per
// the emulator).
const (
	EPPortStatusUpdate EndpointOp = 0 // announce which local ports are up
	EPEVProbe          EndpointOp = 1 // probe one EV (path), answered by a response
)

// String returns the spec's name for op.
func (op EndpointOp) String() string {
	switch op {
	case EPPortStatusUpdate:
		return "PORT_STATUS_UPDATE"
	case EPEVProbe:
		return "EV_PROBE"
	}
	return fmt.Sprintf("EndpointOp(%d)", uint8(op))
}

// EPRequest is the ERTH, the body of an ENDPOINT_REQUEST packet, sent
// connectionless to QPNEndpoint (digest §3.7 [S]).
type EPRequest struct {
	Type           uint8 // 4 bits
	NextHdr        uint8 // 5 bits
	Resv1          uint8 // reserved bits of byte 1 (b6-2), in place
	Op             EndpointOp
	Resv2          uint8 // reserved byte 2
	VendorInfo     uint8
	PortStatusMask uint32 // bit i set: local port i+1 is up (PORT_STATUS_UPDATE)
	Resv8          uint32 // reserved bytes 8-11
	TS             TSETH  // bytes 12-15
}

// Append appends the ERTHLen-byte encoding of r to b.
func (r *EPRequest) Append(b []byte) []byte {
	b, w := grow(b, ERTHLen)
	r.put(w)
	return b
}

// put writes the header into w[:ERTHLen].
func (r *EPRequest) put(w []byte) {
	w = w[:ERTHLen]
	putTypeNext(w, r.Type, r.NextHdr)
	w[erthOffFlags] |= r.Resv1&erthResv1Mask | uint8(r.Op)&erthOpMask
	w[erthOffResv2] = r.Resv2
	w[erthOffVendor] = r.VendorInfo
	binary.BigEndian.PutUint32(w[erthOffMask:], r.PortStatusMask)
	binary.BigEndian.PutUint32(w[erthOffResv8:], r.Resv8)
	r.TS.put(w[erthOffTS:])
}

// Decode decodes an ERTH from the start of b and returns ERTHLen.
func (r *EPRequest) Decode(b []byte) (int, error) {
	if len(b) < ERTHLen {
		return 0, ErrTruncated
	}
	b = b[:ERTHLen]
	r.Type, r.NextHdr = typeNext(b)
	r.Resv1 = b[erthOffFlags] & erthResv1Mask
	r.Op = EndpointOp(b[erthOffFlags] & erthOpMask)
	r.Resv2 = b[erthOffResv2]
	r.VendorInfo = b[erthOffVendor]
	r.PortStatusMask = binary.BigEndian.Uint32(b[erthOffMask:])
	r.Resv8 = binary.BigEndian.Uint32(b[erthOffResv8:])
	r.TS.get(b[erthOffTS:])
	return ERTHLen, nil
}

// EPResponse is the EETH, the body of an ENDPOINT_RESPONSE packet. The
// op and PortStatusMask placements are our choice (see docs/wire.md); the
// requester matches a response to its request by TxTimestamp.
type EPResponse struct {
	Type           uint8 // 4 bits
	NextHdr        uint8 // 5 bits
	Resv1          uint8 // reserved bits of byte 1 (b6-2), in place
	Op             EndpointOp
	Resv2          uint16   // reserved bytes 2-3
	PortStatusMask uint32   // our choice: the responder's port status, bytes 4-7
	Resv8          [20]byte // reserved bytes 8-27
	TxTimestamp    uint16   // echoed from the request's TSETH
	Resv30         [6]byte  // reserved bytes 30-35
}

// Append appends the EETHLen-byte encoding of r to b.
func (r *EPResponse) Append(b []byte) []byte {
	b, w := grow(b, EETHLen)
	r.put(w)
	return b
}

// put writes the header into w[:EETHLen].
func (r *EPResponse) put(w []byte) {
	w = w[:EETHLen]
	putTypeNext(w, r.Type, r.NextHdr)
	w[eethOffFlags] |= r.Resv1&eethResv1Mask | uint8(r.Op)&eethOpMask
	binary.BigEndian.PutUint16(w[eethOffResv2:], r.Resv2)
	binary.BigEndian.PutUint32(w[eethOffMask:], r.PortStatusMask)
	copy(w[eethOffResv8:], r.Resv8[:])
	binary.BigEndian.PutUint16(w[eethOffTimestamp:], r.TxTimestamp)
	copy(w[eethOffResv30:], r.Resv30[:])
}

// Decode decodes an EETH from the start of b and returns EETHLen.
func (r *EPResponse) Decode(b []byte) (int, error) {
	if len(b) < EETHLen {
		return 0, ErrTruncated
	}
	b = b[:EETHLen]
	r.Type, r.NextHdr = typeNext(b)
	r.Resv1 = b[eethOffFlags] & eethResv1Mask
	r.Op = EndpointOp(b[eethOffFlags] & eethOpMask)
	r.Resv2 = binary.BigEndian.Uint16(b[eethOffResv2:])
	r.PortStatusMask = binary.BigEndian.Uint32(b[eethOffMask:])
	copy(r.Resv8[:], b[eethOffResv8:])
	r.TxTimestamp = binary.BigEndian.Uint16(b[eethOffTimestamp:])
	copy(r.Resv30[:], b[eethOffResv30:])
	return EETHLen, nil
}
