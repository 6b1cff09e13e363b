package wire

// Small helpers shared by the header codecs. All of them assume the caller
// has checked the slice length.

// grow extends b by n bytes and returns the extended slice and the new n
// bytes. It reuses spare capacity, so appending into a buffer that is large
// enough does not allocate. The new bytes keep whatever the spare capacity
// held: every Append writes every byte of its header (TestAppendIntoDirty
// checks this).
func grow(b []byte, n int) (all, hdr []byte) {
	l := len(b)
	if cap(b)-l < n {
		b = append(b, make([]byte, n)...)
	} else {
		b = b[:l+n]
	}
	return b, b[l : l+n]
}

func get24(b []byte) uint32 {
	_ = b[2]
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}

func put24(b []byte, v uint32) {
	_ = b[2]
	b[0] = byte(v >> 16)
	b[1] = byte(v >> 8)
	b[2] = byte(v)
}

// flag returns m if v is set, else 0.
func flag(v bool, m byte) byte {
	if v {
		return m
	}
	return 0
}

// The MRC extension headers that follow the BTH of control packets (SETH,
// NETH, PETH, ERTH, EETH) start with the same 9 bits, from the spec (digest
// §3.2 [S]): type (4 bits, byte 0 b7-4), next_hdr (5 bits: byte 0 b3-0 hold
// next_hdr[4:1], byte 1 b7 holds next_hdr[0]).
const (
	typeShift   = 4
	typeMask    = 0x0F
	nextHdrMask = 0x1F
	nextHdrLow  = 0x80 // byte 1 bit that holds next_hdr[0]
)

// putTypeNext writes type and next_hdr into b[0] and the top bit of b[1].
// The caller ORs the other bits of b[1] in afterwards.
func putTypeNext(b []byte, typ, next uint8) {
	_ = b[1]
	b[0] = (typ&typeMask)<<typeShift | (next&nextHdrMask)>>1
	b[1] = flag(next&1 != 0, nextHdrLow)
}

// typeNext reads what putTypeNext wrote.
func typeNext(b []byte) (typ, next uint8) {
	_ = b[1]
	return b[0] >> typeShift, (b[0]&typeMask)<<1 | b[1]>>7
}

// psnDiff returns a-b in 24-bit serial arithmetic, in [-2^23, 2^23).
func psnDiff(a, b uint32) int32 {
	return int32((a-b)<<8) >> 8
}

// The cc_type/cc_fl byte of the SETH and the NETH holds two 4-bit fields.
const (
	ccTypeShift = 4
	ccNibble    = 0x0F
)

// putCC packs cc_type (b7-4) and cc_fl (b3-0) into a byte.
func putCC(typ, fl uint8) byte { return (typ&ccNibble)<<ccTypeShift | fl&ccNibble }

// getCC unpacks what putCC packed.
func getCC(b byte) (typ, fl uint8) { return b >> ccTypeShift, b & ccNibble }
