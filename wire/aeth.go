package wire

// AETHLen is the length of the ACK extended transport header.
const AETHLen = 4

// AETH layout, from the spec (IBTA Vol. 1 §9.3.5; digest §3.2).
const (
	aethOffSyndrome = 0 // syndrome, 8 bits
	aethOffMSN      = 1 // MSN, 24 bits
)

// AETH syndromes, from the spec (IBTA Vol. 1 §9.3.5). Syndrome
// bits 6-5 give the kind (00 ACK, 01 RNR NAK, 11 NAK), bits 4-0 the value.
// MRC has no RNR flow control, so its ACKs always carry the "invalid
// credit" value 0x1F (digest §3.2 [S]).
const (
	AETHAck                = 0x1F // ACK, credit count 0b11111 (no credit information)
	AETHNakPSNSeqError     = 0x60 // NAK: PSN sequence error
	AETHNakInvalidRequest  = 0x61 // NAK: invalid request
	AETHNakRemoteAccess    = 0x62 // NAK: remote access error
	AETHNakRemoteOperation = 0x63 // NAK: remote operational error
)

// AETH is the ACK Extended Transport Header of a RoCE transport ACK
// (opcode ACKNOWLEDGE). MRC keeps transport ACK/NAK for compatibility,
// separate from its reliability SACKs (digest §3.1 [S]).
type AETH struct {
	Syndrome uint8
	MSN      uint32 // 24 bits
}

// Append appends the AETHLen-byte encoding of h to b.
func (h *AETH) Append(b []byte) []byte {
	b, w := grow(b, AETHLen)
	h.put(w)
	return b
}

// put writes the header into w[:AETHLen].
func (h *AETH) put(w []byte) {
	w = w[:AETHLen]
	w[aethOffSyndrome] = h.Syndrome
	put24(w[aethOffMSN:], h.MSN)
}

// Decode decodes an AETH from the start of b and returns AETHLen.
func (h *AETH) Decode(b []byte) (int, error) {
	if len(b) < AETHLen {
		return 0, ErrTruncated
	}
	h.Syndrome = b[aethOffSyndrome]
	h.MSN = get24(b[aethOffMSN:])
	return AETHLen, nil
}
