package wire

import (
	"encoding/binary"
	"fmt"
)

// Lengths of the reliability SACK headers: the SETH, the CC_STATE block
// that follows it, and both together as they appear after the BTH of a
// RELIABILITY_SACK packet.
const (
	SETHLen    = 28
	CCStateLen = 8
	SACKLen    = SETHLen + CCStateLen
)

// SETH layout, from the spec (digest §3.2 [S]). Bytes 0-1 are the common
// type/next_hdr prefix (see putTypeNext).
const (
	sethOffFlags      = 1  // next_hdr[0] b7 | M b6-5 | resv b4-2 | pr b1 | rtx b0 (ours)
	sethOffAckOffset  = 2  // ack_psn_offset, signed 16 bits
	sethOffEntropy    = 4  // entropy (reflected EV), 32 bits
	sethOffSPDCID     = 8  // spdcid, 16 bits
	sethOffDPDCID     = 10 // dpdcid, 16 bits
	sethOffResv12     = 12 // reserved byte
	sethOffCackPSN    = 13 // cack_psn, 24 bits
	sethOffCC         = 16 // cc_type b7-4 | cc_fl b3-0
	sethOffMPR        = 17 // mpr, units of 128 PSNs
	sethOffSackOffset = 18 // sack_offset, signed 16 bits
	sethOffBitmap     = 20 // sack_bitmap, 64 bits

	sethMShift = 5
	sethMMask  = 0x3
	sethPR     = 0x02
	sethRtx    = 0x01
	// SETHResvMask selects the reserved bits of SETH byte 1 (b4-2),
	// which SACK.Resv1 holds in place.
	SETHResvMask = 0x1C

	// MPRUnit is the number of PSNs in one unit of the mpr field.
	MPRUnit = 128
	// SACKBitmapBits is the number of PSNs the SACK bitmap covers.
	SACKBitmapBits = 64
)

// CC_STATE layout, from the spec (digest §3.2 [S]; UET 1.0 for units).
const (
	ccsOffTimestamp = 0 // tx_timestamp (reflected from TSETH), 16 bits
	ccsOffOOO       = 2 // resv b15 | ooo_count b14-0
	ccsOffPen       = 4 // r_c b7 | rcv_cwnd_pen b6-0
	ccsOffRcvd      = 5 // rcvd_bytes, 24 bits, 256-byte units

	ccsResv    = 0x8000
	ccsOOOMask = 0x7FFF
	ccsRC      = 0x80
	ccsPenMask = 0x7F

	// RcvdBytesUnit is the number of bytes in one unit of
	// CCState.RcvdBytes (UET 1.0, digest §3.8 [U]).
	RcvdBytesUnit = 256
)

// SackMode is the SETH M field: what the responder asks the sender to do
// with the EV the acknowledged packet used (digest §3.4 [S]).
type SackMode uint8

// SackMode values, from the spec (digest §3.2 [S]).
const (
	SackNone       SackMode = 0 // path fine
	SackSkipOnce   SackMode = 1 // packet was ECN-marked: skip the EV for a while
	SackAlwaysSkip SackMode = 2 // stop using the EV (assumed bad)
)

// String returns the spec's name for m.
func (m SackMode) String() string {
	switch m {
	case SackNone:
		return "NONE"
	case SackSkipOnce:
		return "SKIP_ONCE"
	case SackAlwaysSkip:
		return "ALWAYS_SKIP"
	}
	return fmt.Sprintf("SackMode(%d)", uint8(m))
}

// CCState is the 8-byte congestion-control state block that follows the
// SETH (digest §3.2 [S], §3.8 [U]).
type CCState struct {
	TxTimestamp uint16 // the TSETH timestamp of the acknowledged packet
	Resv        uint8  // 1 reserved bit (byte 2 b7), 0 or 1
	OOOCount    uint16 // 15 bits: out-of-order packets seen
	RC          bool   // r_c: restore the saved cwnd
	RcvCwndPen  uint8  // 7 bits: receiver cwnd penalty, 0..127
	RcvdBytes   uint32 // 24 bits: bytes received, in RcvdBytesUnit units
}

// Append appends the CCStateLen-byte encoding of c to b.
func (c *CCState) Append(b []byte) []byte {
	b, w := grow(b, CCStateLen)
	c.put(w)
	return b
}

func (c *CCState) put(w []byte) {
	_ = w[CCStateLen-1]
	binary.BigEndian.PutUint16(w[ccsOffTimestamp:], c.TxTimestamp)
	o := c.OOOCount & ccsOOOMask
	if c.Resv&1 != 0 {
		o |= ccsResv
	}
	binary.BigEndian.PutUint16(w[ccsOffOOO:], o)
	w[ccsOffPen] = flag(c.RC, ccsRC) | c.RcvCwndPen&ccsPenMask
	put24(w[ccsOffRcvd:], c.RcvdBytes)
}

// Decode decodes a CC_STATE block from the start of b and returns
// CCStateLen.
func (c *CCState) Decode(b []byte) (int, error) {
	if len(b) < CCStateLen {
		return 0, ErrTruncated
	}
	c.get(b)
	return CCStateLen, nil
}

func (c *CCState) get(b []byte) {
	b = b[:CCStateLen]
	o := binary.BigEndian.Uint16(b[ccsOffOOO:])
	// Every field, one by one (see BTH.Decode).
	c.TxTimestamp = binary.BigEndian.Uint16(b[ccsOffTimestamp:])
	c.Resv = uint8(o >> 15)
	c.OOOCount = o & ccsOOOMask
	c.RC = b[ccsOffPen]&ccsRC != 0
	c.RcvCwndPen = b[ccsOffPen] & ccsPenMask
	c.RcvdBytes = get24(b[ccsOffRcvd:])
}

// SACK is the body of a RELIABILITY_SACK packet: the SETH and its CC_STATE
// (digest §3.2, §3.6 [S]).
//
// Bitmap convention (the spec's, digest §3.2: bit 0 is the LSB): bit i of
// the bitmap stands for PSN Base()+i, where Base() = CackPSN + SackOffset;
// i = 0 is the least significant bit of the big-endian SackBitmap, the
// last bit on the wire (b0 of byte 27). A set bit means received.
type SACK struct {
	Type         uint8    // 4 bits
	NextHdr      uint8    // 5 bits
	M            SackMode // 2 bits
	Resv1        uint8    // reserved bits of byte 1, in place (SETHResvMask)
	PR           bool     // probe response: this SACK answers a reliability probe
	Rtx          bool     // its trigger was a retransmission (BTH.rtx); ours, in a reserved bit (docs/wire.md)
	AckPSNOffset int16    // PSN that triggered this SACK, relative to CackPSN
	Entropy      EV       // the EV of the acknowledged packet, reflected
	SPDCID       uint16   // source PDC id
	DPDCID       uint16   // destination PDC id
	Resv12       uint8    // reserved byte 12
	CackPSN      uint32   // 24 bits: every PSN up to this one is received
	CCType       uint8    // 4 bits
	CCFlags      uint8    // 4 bits (cc_fl)
	MPR          uint8    // responder's PSN window, in MPRUnit PSNs
	SackOffset   int16    // bitmap base relative to CackPSN
	SackBitmap   uint64   // see the bitmap convention above
	CC           CCState
}

// Append appends the SACKLen-byte encoding of s (SETH, then CC_STATE) to b.
func (s *SACK) Append(b []byte) []byte {
	b, w := grow(b, SACKLen)
	s.put(w)
	return b
}

// put writes the header into w[:SACKLen].
func (s *SACK) put(w []byte) {
	w = w[:SACKLen]
	putTypeNext(w, s.Type, s.NextHdr)
	w[sethOffFlags] |= (uint8(s.M)&sethMMask)<<sethMShift | flag(s.PR, sethPR) | flag(s.Rtx, sethRtx) | s.Resv1&SETHResvMask
	binary.BigEndian.PutUint16(w[sethOffAckOffset:], uint16(s.AckPSNOffset))
	binary.BigEndian.PutUint32(w[sethOffEntropy:], uint32(s.Entropy))
	binary.BigEndian.PutUint16(w[sethOffSPDCID:], s.SPDCID)
	binary.BigEndian.PutUint16(w[sethOffDPDCID:], s.DPDCID)
	w[sethOffResv12] = s.Resv12
	put24(w[sethOffCackPSN:], s.CackPSN)
	w[sethOffCC] = putCC(s.CCType, s.CCFlags)
	w[sethOffMPR] = s.MPR
	binary.BigEndian.PutUint16(w[sethOffSackOffset:], uint16(s.SackOffset))
	binary.BigEndian.PutUint64(w[sethOffBitmap:], s.SackBitmap)
	s.CC.put(w[SETHLen:])
}

// Decode decodes a SETH and its CC_STATE from the start of b and returns
// SACKLen.
func (s *SACK) Decode(b []byte) (int, error) {
	if len(b) < SACKLen {
		return 0, ErrTruncated
	}
	b = b[:SACKLen]
	f := b[sethOffFlags]
	s.Type, s.NextHdr = typeNext(b)
	s.M = SackMode(f >> sethMShift & sethMMask)
	s.Resv1 = f & SETHResvMask
	s.PR = f&sethPR != 0
	s.Rtx = f&sethRtx != 0
	s.AckPSNOffset = int16(binary.BigEndian.Uint16(b[sethOffAckOffset:]))
	s.Entropy = EV(binary.BigEndian.Uint32(b[sethOffEntropy:]))
	s.SPDCID = binary.BigEndian.Uint16(b[sethOffSPDCID:])
	s.DPDCID = binary.BigEndian.Uint16(b[sethOffDPDCID:])
	s.Resv12 = b[sethOffResv12]
	s.CackPSN = get24(b[sethOffCackPSN:])
	s.CCType, s.CCFlags = getCC(b[sethOffCC])
	s.MPR = b[sethOffMPR]
	s.SackOffset = int16(binary.BigEndian.Uint16(b[sethOffSackOffset:]))
	s.SackBitmap = binary.BigEndian.Uint64(b[sethOffBitmap:])
	s.CC.get(b[SETHLen:])
	return SACKLen, nil
}

// AckPSN returns the PSN whose arrival triggered the SACK: CackPSN +
// AckPSNOffset, modulo 2^24. (Meaning inferred from UET [I].)
func (s *SACK) AckPSN() uint32 {
	return (s.CackPSN + uint32(int32(s.AckPSNOffset))) & PSNMask
}

// Base returns the PSN of bitmap bit 0: CackPSN + SackOffset, modulo 2^24.
func (s *SACK) Base() uint32 {
	return (s.CackPSN + uint32(int32(s.SackOffset))) & PSNMask
}

// Bit reports whether bitmap bit i (PSN Base()+i) is set. It returns false
// for i outside [0, SACKBitmapBits).
func (s *SACK) Bit(i int) bool {
	if uint(i) >= SACKBitmapBits {
		return false
	}
	return s.SackBitmap>>uint(i)&1 != 0
}

// SetBit sets bitmap bit i (PSN Base()+i). It ignores i outside
// [0, SACKBitmapBits).
func (s *SACK) SetBit(i int) {
	if uint(i) < SACKBitmapBits {
		s.SackBitmap |= 1 << uint(i)
	}
}

// Acked reports whether the SACK says psn was received: psn is at or
// before CackPSN (24-bit serial arithmetic, digest §3.3), or its bitmap
// bit is set. A clear bit means "no information", not "lost".
func (s *SACK) Acked(psn uint32) bool {
	psn &= PSNMask
	if psnDiff(s.CackPSN&PSNMask, psn) >= 0 {
		return true
	}
	return s.Bit(int((psn - s.Base()) & PSNMask))
}
