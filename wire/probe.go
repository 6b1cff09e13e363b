package wire

import "encoding/binary"

// PETHLen is the length of the reliability probe header.
const PETHLen = 16

// PETH layout, from the spec (digest §3.2 [S]). Bytes 0-1 are the common
// type/next_hdr prefix (see putTypeNext); bytes 12-15 have the TSETH
// layout.
const (
	pethOffFlags  = 1  // next_hdr[0] b7 | resv b6-0
	pethOffResv2  = 2  // reserved byte
	pethOffVendor = 3  // vendor_info
	pethOffID     = 4  // probe_id, 16 bits
	pethOffResv6  = 6  // reserved, 16 bits
	pethOffSPDCID = 8  // spdcid, 16 bits
	pethOffDPDCID = 10 // dpdcid, 16 bits
	pethOffTS     = 12 // tx_timestamp 16 | tsr 1 | resv 11 | ftype 4
	pethResv1Mask = 0x7F
)

// Probe is the PETH, the body of a RELIABILITY_PROBE_REQ packet. A probe
// consumes no PSN and elicits a SACK with PR set; its EV selects the path
// under test (digest §3.7 [S]).
type Probe struct {
	Type       uint8 // 4 bits
	NextHdr    uint8 // 5 bits
	Resv1      uint8 // 7 reserved bits of byte 1 (b6-0)
	Resv2      uint8 // reserved byte 2
	VendorInfo uint8
	ProbeID    uint16
	Resv6      uint16 // reserved bytes 6-7
	SPDCID     uint16 // source PDC id
	DPDCID     uint16 // destination PDC id
	TS         TSETH  // bytes 12-15
}

// Append appends the PETHLen-byte encoding of p to b.
func (p *Probe) Append(b []byte) []byte {
	b, w := grow(b, PETHLen)
	p.put(w)
	return b
}

// put writes the header into w[:PETHLen].
func (p *Probe) put(w []byte) {
	w = w[:PETHLen]
	putTypeNext(w, p.Type, p.NextHdr)
	w[pethOffFlags] |= p.Resv1 & pethResv1Mask
	w[pethOffResv2] = p.Resv2
	w[pethOffVendor] = p.VendorInfo
	binary.BigEndian.PutUint16(w[pethOffID:], p.ProbeID)
	binary.BigEndian.PutUint16(w[pethOffResv6:], p.Resv6)
	binary.BigEndian.PutUint16(w[pethOffSPDCID:], p.SPDCID)
	binary.BigEndian.PutUint16(w[pethOffDPDCID:], p.DPDCID)
	p.TS.put(w[pethOffTS:])
}

// Decode decodes a PETH from the start of b and returns PETHLen.
func (p *Probe) Decode(b []byte) (int, error) {
	if len(b) < PETHLen {
		return 0, ErrTruncated
	}
	b = b[:PETHLen]
	p.Type, p.NextHdr = typeNext(b)
	p.Resv1 = b[pethOffFlags] & pethResv1Mask
	p.Resv2 = b[pethOffResv2]
	p.VendorInfo = b[pethOffVendor]
	p.ProbeID = binary.BigEndian.Uint16(b[pethOffID:])
	p.Resv6 = binary.BigEndian.Uint16(b[pethOffResv6:])
	p.SPDCID = binary.BigEndian.Uint16(b[pethOffSPDCID:])
	p.DPDCID = binary.BigEndian.Uint16(b[pethOffDPDCID:])
	p.TS.get(b[pethOffTS:])
	return PETHLen, nil
}
