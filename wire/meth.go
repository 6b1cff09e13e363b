package wire

import "encoding/binary"

// METHLen is the length of the MRC Extended Transport Header.
const METHLen = 4

// METH layout, from the spec (digest §3.1–3.2 [S]).
const (
	methOffRQMSN = 0 // RQMSN, 16 bits
	methOffMSN   = 2 // MSN, 16 bits
)

// METH is the MRC message header that follows the BTH of every data packet
// (digest §3.1 [S]). WRITE_IMM completions are delivered in send order
// using these sequence numbers.
type METH struct {
	RQMSN uint16 // receive-queue message sequence number (WRITE_IMM)
	MSN   uint16 // requester message sequence number
}

// Append appends the METHLen-byte encoding of h to b.
func (h *METH) Append(b []byte) []byte {
	b, w := grow(b, METHLen)
	h.put(w)
	return b
}

// put writes the header into w[:METHLen].
func (h *METH) put(w []byte) {
	w = w[:METHLen]
	binary.BigEndian.PutUint16(w[methOffRQMSN:], h.RQMSN)
	binary.BigEndian.PutUint16(w[methOffMSN:], h.MSN)
}

// Decode decodes a METH from the start of b and returns METHLen.
func (h *METH) Decode(b []byte) (int, error) {
	if len(b) < METHLen {
		return 0, ErrTruncated
	}
	h.RQMSN = binary.BigEndian.Uint16(b[methOffRQMSN:])
	h.MSN = binary.BigEndian.Uint16(b[methOffMSN:])
	return METHLen, nil
}
