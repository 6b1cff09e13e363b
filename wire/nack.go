package wire

import (
	"encoding/binary"
	"fmt"
)

// NETHLen is the length of the reliability NACK header.
const NETHLen = 20

// NETH layout, from the spec (digest §3.2 [S]). Bytes 0-1 are the common
// type/next_hdr prefix (see putTypeNext).
const (
	nethOffFlags     = 1  // next_hdr[0] b7 | resv b6 | ce b5 (our choice) | resv b4-0
	nethOffReason    = 2  // nack_reason
	nethOffVendor    = 3  // vendor_info
	nethOffEntropy   = 4  // entropy (reflected EV), 32 bits
	nethOffSPDCID    = 8  // spdcid, 16 bits
	nethOffDPDCID    = 10 // dpdcid, 16 bits
	nethOffResv12    = 12 // reserved byte
	nethOffNackPSN   = 13 // nack_psn, 24 bits
	nethOffCC        = 16 // cc_type b7-4 | cc_fl b3-0
	nethOffResv17    = 17 // reserved byte
	nethOffTimestamp = 18 // tx_timestamp, 16 bits
	nethResv1Mask    = 0x5F
	// nethCE is our choice for the CE flag (digest §3.6 [U]: a NACK
	// carries the ECN CE bit of the packet it answers): the bit that
	// M = SKIP_ONCE sets in the SETH, which means the same there.
	nethCE = 0x20

	// NACKDefaultCCType is the cc_type a NACK carries by default.
	NACKDefaultCCType = 0x2
)

// NackReason is the NETH nack_reason code.
type NackReason uint8

// NACK reasons, from the spec (digest §3.2 [S]; TRIMMED values match UET),
// except NackWImmLimit.
const (
	NackTrimmed        NackReason = 0x01 // trimmed in the fabric: retransmit, skip the EV
	NackTrimmedLastHop NackReason = 0x02 // trimmed at the last hop: retransmit, path fine
	NackNoBitmap       NackReason = 0x06 // responder out of PSN tracking resources
	NackNoPktBuffer    NackReason = 0x07 // responder out of packet buffers
	NackNoResource     NackReason = 0x0A // responder out of other resources
	NackPSNOORWindow   NackReason = 0x0B // PSN outside the responder's tracking window
	// NackWImmLimit is "inflight WriteImm limit exceeded". The spec has
	// such a code but its value is not public; 0x0C is our choice.
	NackWImmLimit  NackReason = 0x0C
	NackUnexpEvent NackReason = 0x19 // unexpected event: fatal, QP to error
)

// String returns the spec's name for r.
func (r NackReason) String() string {
	switch r {
	case NackTrimmed:
		return "TRIMMED"
	case NackTrimmedLastHop:
		return "TRIMMED_LASTHOP"
	case NackNoBitmap:
		return "NO_BITMAP"
	case NackNoPktBuffer:
		return "NO_PKT_BUFFER"
	case NackNoResource:
		return "NO_RESOURCE"
	case NackPSNOORWindow:
		return "PSN_OOR_WINDOW"
	case NackWImmLimit:
		return "WIMM_LIMIT"
	case NackUnexpEvent:
		return "UNEXP_EVENT"
	}
	return fmt.Sprintf("NackReason(%#02x)", uint8(r))
}

// NACK is the NETH, the body of a RELIABILITY_NACK packet (digest §3.2,
// §3.5–3.6 [S]).
type NACK struct {
	Type        uint8 // 4 bits
	NextHdr     uint8 // 5 bits
	Resv1       uint8 // reserved bits of byte 1 (b6, b4-0), in place
	CE          bool  // our choice: the NACKed packet arrived CE-marked (byte 1 b5)
	Reason      NackReason
	VendorInfo  uint8
	Entropy     EV     // the EV of the NACKed packet, reflected
	SPDCID      uint16 // source PDC id
	DPDCID      uint16 // destination PDC id
	Resv12      uint8  // reserved byte 12
	NackPSN     uint32 // 24 bits
	CCType      uint8  // 4 bits; NACKDefaultCCType by default
	CCFlags     uint8  // 4 bits (cc_fl)
	Resv17      uint8  // reserved byte 17
	TxTimestamp uint16 // timestamp of the NACKed packet, reflected
}

// Append appends the NETHLen-byte encoding of n to b.
func (n *NACK) Append(b []byte) []byte {
	b, w := grow(b, NETHLen)
	n.put(w)
	return b
}

// put writes the header into w[:NETHLen].
func (n *NACK) put(w []byte) {
	w = w[:NETHLen]
	putTypeNext(w, n.Type, n.NextHdr)
	w[nethOffFlags] |= n.Resv1&nethResv1Mask | flag(n.CE, nethCE)
	w[nethOffReason] = uint8(n.Reason)
	w[nethOffVendor] = n.VendorInfo
	binary.BigEndian.PutUint32(w[nethOffEntropy:], uint32(n.Entropy))
	binary.BigEndian.PutUint16(w[nethOffSPDCID:], n.SPDCID)
	binary.BigEndian.PutUint16(w[nethOffDPDCID:], n.DPDCID)
	w[nethOffResv12] = n.Resv12
	put24(w[nethOffNackPSN:], n.NackPSN)
	w[nethOffCC] = putCC(n.CCType, n.CCFlags)
	w[nethOffResv17] = n.Resv17
	binary.BigEndian.PutUint16(w[nethOffTimestamp:], n.TxTimestamp)
}

// Decode decodes a NETH from the start of b and returns NETHLen.
func (n *NACK) Decode(b []byte) (int, error) {
	if len(b) < NETHLen {
		return 0, ErrTruncated
	}
	b = b[:NETHLen]
	n.Type, n.NextHdr = typeNext(b)
	n.Resv1 = b[nethOffFlags] & nethResv1Mask
	n.CE = b[nethOffFlags]&nethCE != 0
	n.Reason = NackReason(b[nethOffReason])
	n.VendorInfo = b[nethOffVendor]
	n.Entropy = EV(binary.BigEndian.Uint32(b[nethOffEntropy:]))
	n.SPDCID = binary.BigEndian.Uint16(b[nethOffSPDCID:])
	n.DPDCID = binary.BigEndian.Uint16(b[nethOffDPDCID:])
	n.Resv12 = b[nethOffResv12]
	n.NackPSN = get24(b[nethOffNackPSN:])
	n.CCType, n.CCFlags = getCC(b[nethOffCC])
	n.Resv17 = b[nethOffResv17]
	n.TxTimestamp = binary.BigEndian.Uint16(b[nethOffTimestamp:])
	return NETHLen, nil
}
