package wire

import "encoding/binary"

// BTHLen is the length of the Base Transport Header.
const BTHLen = 12

// Numbering limits, from the spec (IBTA Vol. 1 §9.2; digest §3.3).
const (
	PSNMask = 1<<24 - 1 // PSNs are 24 bits and wrap
	QPNMask = 1<<24 - 1 // QP numbers are 24 bits

	// QPNEndpoint is the reserved destination QP of the connectionless
	// endpoint operations (ENDPOINT_REQUEST/RESPONSE), digest §3.7 [S].
	QPNEndpoint = 2
	// PKeyDefault is the default partition key.
	PKeyDefault = 0xFFFF
)

// BTH layout, from the spec: IBTA Vol. 1 §9.2 field order, with MRC's Rtx
// and TS bits in byte 8 (digest §3.2 [S]). Big-endian; "b7" is the MSB.
const (
	bthOffOpcode = 0 // opcode
	bthOffFlags  = 1 // SE b7 | M b6 | PadCnt b5-4 | TVer b3-0
	bthOffPKey   = 2 // P_Key, 16 bits
	bthOffResv8a = 4 // Resv8a: RoCEv2 FECN b7, BECN b6; the ICRC masks it to 0xFF
	bthOffDestQP = 5 // DestQP, 24 bits
	bthOffAck    = 8 // AckReq b7 | resv b6 | Rtx b5 | TS b4 | resv b3-0
	bthOffPSN    = 9 // PSN, 24 bits

	bthSE       = 0x80
	bthMigReq   = 0x40
	bthPadShift = 4
	bthPadMask  = 0x3
	bthTVerMask = 0x0F
	bthAckReq   = 0x80
	bthRtx      = 0x20
	bthTS       = 0x10

	// BTHResvMask selects the reserved bits of BTH byte 8 (b6, b3-0), which
	// BTH.Resv holds in place.
	BTHResvMask = 0x4F
)

// BTH is the Base Transport Header (IBTA Vol. 1 §9.2, with MRC's byte 8).
// The zero value is a valid header (opcode 0). Fields wider than the wire
// field are truncated by Append.
type BTH struct {
	Opcode Opcode
	SE     bool   // solicited event
	MigReq bool   // M: migration state
	PadCnt uint8  // 2 bits: pad bytes after the payload
	TVer   uint8  // 4 bits: transport header version (0)
	PKey   uint16 // partition key
	Resv8a uint8  // raw byte 4 (RoCEv2 FECN/BECN)
	DestQP uint32 // 24 bits
	AckReq bool   // A: ask the responder to acknowledge now
	Rtx    bool   // MRC: this packet is a retransmission
	TS     bool   // MRC: a TSETH follows the METH (data packets)
	Resv   uint8  // reserved bits of byte 8, in place (BTHResvMask)
	PSN    uint32 // 24 bits
}

// Append appends the BTHLen-byte encoding of h to b.
func (h *BTH) Append(b []byte) []byte {
	b, w := grow(b, BTHLen)
	h.put(w)
	return b
}

// put writes the header into w[:BTHLen].
func (h *BTH) put(w []byte) {
	w = w[:BTHLen]
	w[bthOffOpcode] = byte(h.Opcode)
	w[bthOffFlags] = flag(h.SE, bthSE) | flag(h.MigReq, bthMigReq) |
		(h.PadCnt&bthPadMask)<<bthPadShift | h.TVer&bthTVerMask
	binary.BigEndian.PutUint16(w[bthOffPKey:], h.PKey)
	w[bthOffResv8a] = h.Resv8a
	put24(w[bthOffDestQP:], h.DestQP)
	w[bthOffAck] = flag(h.AckReq, bthAckReq) | flag(h.Rtx, bthRtx) | flag(h.TS, bthTS) | h.Resv&BTHResvMask
	put24(w[bthOffPSN:], h.PSN)
}

// Decode decodes a BTH from the start of b and returns BTHLen.
func (h *BTH) Decode(b []byte) (int, error) {
	if len(b) < BTHLen {
		return 0, ErrTruncated
	}
	b = b[:BTHLen]
	f, a := b[bthOffFlags], b[bthOffAck]
	// Field by field, not *h = BTH{...}: a composite literal through a
	// pointer is built in a temporary and copied in 16-byte pieces, which
	// stall on its byte-wide stores (store forwarding). Every field is set.
	h.Opcode = Opcode(b[bthOffOpcode])
	h.SE = f&bthSE != 0
	h.MigReq = f&bthMigReq != 0
	h.PadCnt = f >> bthPadShift & bthPadMask
	h.TVer = f & bthTVerMask
	h.PKey = binary.BigEndian.Uint16(b[bthOffPKey:])
	h.Resv8a = b[bthOffResv8a]
	h.DestQP = get24(b[bthOffDestQP:])
	h.AckReq = a&bthAckReq != 0
	h.Rtx = a&bthRtx != 0
	h.TS = a&bthTS != 0
	h.Resv = a & BTHResvMask
	h.PSN = get24(b[bthOffPSN:])
	return BTHLen, nil
}
