package wire

import "encoding/binary"

// TSETHLen is the length of the timestamp extension header.
const TSETHLen = 4

// TSETH layout, from the spec (digest §3.2 [S]). The same four bytes end
// the PETH and the ERTH, which hold a TSETH value for them.
const (
	tsethOffTimestamp = 0 // tx_timestamp, 16 bits
	tsethOffFlags     = 2 // tsr b15 | resv b14-4 | ftype b3-0

	tsethTSR       = 0x8000
	tsethResvShift = 4
	tsethResvMask  = 0x7FF
	tsethFTypeMask = 0xF

	// TSETHFType is the ftype value senders put in a TSETH.
	TSETHFType = 1
)

// TSETH carries the sender's transmit timestamp, which the responder
// reflects in the SACK's CC_STATE for RTT sampling (digest §3.2, §3.7 [S]).
// It follows the METH of a data packet whose BTH has TS set. Decode keeps
// every bit, so FType is whatever the wire held: a sender sets it to
// TSETHFType.
type TSETH struct {
	TxTimestamp uint16
	TSR         bool   // resolution flag (128 ns or 1 µs units; the mapping is not public)
	Resv        uint16 // 11 reserved bits
	FType       uint8  // 4 bits; TSETHFType
}

// Append appends the TSETHLen-byte encoding of h to b.
func (h *TSETH) Append(b []byte) []byte {
	b, w := grow(b, TSETHLen)
	h.put(w)
	return b
}

func (h *TSETH) put(w []byte) {
	binary.BigEndian.PutUint16(w[tsethOffTimestamp:], h.TxTimestamp)
	f := uint16(h.FType) & tsethFTypeMask
	f |= (h.Resv & tsethResvMask) << tsethResvShift
	if h.TSR {
		f |= tsethTSR
	}
	binary.BigEndian.PutUint16(w[tsethOffFlags:], f)
}

// Decode decodes a TSETH from the start of b and returns TSETHLen.
func (h *TSETH) Decode(b []byte) (int, error) {
	if len(b) < TSETHLen {
		return 0, ErrTruncated
	}
	h.get(b)
	return TSETHLen, nil
}

func (h *TSETH) get(b []byte) {
	f := binary.BigEndian.Uint16(b[tsethOffFlags:])
	// Every field, one by one (see BTH.Decode).
	h.TxTimestamp = binary.BigEndian.Uint16(b[tsethOffTimestamp:])
	h.TSR = f&tsethTSR != 0
	h.Resv = f >> tsethResvShift & tsethResvMask
	h.FType = uint8(f & tsethFTypeMask)
}
