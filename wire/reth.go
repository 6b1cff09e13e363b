package wire

import "encoding/binary"

// Lengths of the RDMA extended transport header and the immediate data.
const (
	RETHLen  = 16
	ImmDtLen = 4
)

// RETH layout, from the spec (IBTA Vol. 1 §9.3.3; digest §3.2).
const (
	rethOffVA     = 0  // virtual address, 64 bits
	rethOffRKey   = 8  // R_Key, 32 bits
	rethOffDMALen = 12 // DMA length, 32 bits
)

// RETH is the RDMA Extended Transport Header. MRC puts one in every data
// packet, with the VA of that packet's payload, so packets can be placed in
// any order (digest §3.1).
type RETH struct {
	VA     uint64 // virtual address of this packet's payload
	RKey   uint32 // remote key of the target memory region
	DMALen uint32 // DMA length of the message
}

// Append appends the RETHLen-byte encoding of h to b.
func (h *RETH) Append(b []byte) []byte {
	b, w := grow(b, RETHLen)
	h.put(w)
	return b
}

// put writes the header into w[:RETHLen].
func (h *RETH) put(w []byte) {
	w = w[:RETHLen]
	binary.BigEndian.PutUint64(w[rethOffVA:], h.VA)
	binary.BigEndian.PutUint32(w[rethOffRKey:], h.RKey)
	binary.BigEndian.PutUint32(w[rethOffDMALen:], h.DMALen)
}

// Decode decodes a RETH from the start of b and returns RETHLen.
func (h *RETH) Decode(b []byte) (int, error) {
	if len(b) < RETHLen {
		return 0, ErrTruncated
	}
	b = b[:RETHLen]
	h.VA = binary.BigEndian.Uint64(b[rethOffVA:])
	h.RKey = binary.BigEndian.Uint32(b[rethOffRKey:])
	h.DMALen = binary.BigEndian.Uint32(b[rethOffDMALen:])
	return RETHLen, nil
}

// ImmDt is the 32-bit immediate data of WRITE_LAST_IMM and WRITE_ONLY_IMM
// packets (IBTA Vol. 1 §9.3.4), which follows the RETH.
type ImmDt uint32

// Append appends the ImmDtLen-byte encoding of h to b.
func (h *ImmDt) Append(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(*h))
}

// put writes the immediate into w[:ImmDtLen].
func (h *ImmDt) put(w []byte) { binary.BigEndian.PutUint32(w, uint32(*h)) }

// Decode decodes an ImmDt from the start of b and returns ImmDtLen.
func (h *ImmDt) Decode(b []byte) (int, error) {
	if len(b) < ImmDtLen {
		return 0, ErrTruncated
	}
	*h = ImmDt(binary.BigEndian.Uint32(b))
	return ImmDtLen, nil
}
