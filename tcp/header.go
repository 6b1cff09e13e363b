package tcp

import (
	"encoding/binary"
	"slices"

	"github.com/openmrc/mrc/wire"
)

// HeaderLen is the length of a TCP header without options (RFC 9293
// §3.1); MaxHeaderLen that of one with the most options (data offset 15).
const (
	HeaderLen    = 20
	MaxHeaderLen = 60
)

// ProtoTCP is TCP's IPv6 next-header value (IANA).
const ProtoTCP = 6

// Flags are the TCP control bits (RFC 9293 §3.1; CWR and ECE from
// RFC 3168 §6.1).
type Flags uint8

const (
	FlagFIN Flags = 0x01
	FlagSYN Flags = 0x02
	FlagRST Flags = 0x04
	FlagPSH Flags = 0x08
	FlagACK Flags = 0x10
	FlagURG Flags = 0x20
	FlagECE Flags = 0x40
	FlagCWR Flags = 0x80
)

// TCP option kinds this package reads and writes (IANA "TCP Option Kind
// Numbers"; SACK from RFC 2018 §3).
const (
	optEOL   = 0
	optNOP   = 1
	optSACK  = 5
	optMPTCP = 30 // Multipath TCP, RFC 8684 §3
)

// MaxOptionLen is the most option bytes a header holds (data offset 15).
const MaxOptionLen = MaxHeaderLen - HeaderLen

// MaxSACKBlocks is how many SACK blocks fit in the 40 bytes of option
// space without timestamps (RFC 2018 §3: 2 + 8n bytes, n ≤ 4).
const MaxSACKBlocks = 4

// SACKBlock is one SACK block: the sequence numbers [Left, Right) the
// receiver holds above its cumulative ACK (RFC 2018 §3).
type SACKBlock struct{ Left, Right uint32 }

// Header is a TCP header (RFC 9293 §3.1) with the options this module
// uses: SACK, and one Multipath TCP option for package mptcp. Decode
// skips other options; Append writes these two only.
type Header struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            Flags
	Window           uint16
	Checksum         uint16
	Urgent           uint16
	// SACK holds NSACK blocks.
	SACK  [MaxSACKBlocks]SACKBlock
	NSACK int
	// MPTCP holds one Multipath TCP option (kind 30, RFC 8684 §3) whole
	// (kind, length, subtype and the rest) in its first MPTCPLen bytes;
	// MPTCPLen is 0 for none. Decode keeps the first one it finds.
	MPTCP    [MaxOptionLen]byte
	MPTCPLen int
}

// optionLen returns the bytes of h's options with their padding: the
// SACK option (2 + 8n bytes) and the MPTCP option, in that order, led by
// as many NOPs as make the total a multiple of 4. Without an MPTCP
// option that is two NOPs and SACK, the 4-byte alignment RFC 2018 §3
// suggests.
func (h *Header) optionLen() (total, pad int) {
	n := h.MPTCPLen
	if h.NSACK > 0 {
		n += 2 + 8*h.NSACK
	}
	pad = (4 - n%4) % 4
	return n + pad, pad
}

// Len returns the encoded length of h: 20 bytes and its options.
func (h *Header) Len() int {
	n, _ := h.optionLen()
	return HeaderLen + n
}

// SACKRoom returns how many SACK blocks fit beside h's MPTCP option.
func (h *Header) SACKRoom() int {
	return min(MaxSACKBlocks, max(MaxOptionLen-h.MPTCPLen-2, 0)/8)
}

// Append appends h's encoding to b, with the checksum field as h has it.
// NSACK must be 0..SACKRoom(), and MPTCPLen 0..MaxOptionLen.
func (h *Header) Append(b []byte) []byte {
	n := h.Len()
	off := len(b)
	b = slices.Grow(b, n)[:off+n]
	w := b[off:]
	binary.BigEndian.PutUint16(w[0:], h.SrcPort)
	binary.BigEndian.PutUint16(w[2:], h.DstPort)
	binary.BigEndian.PutUint32(w[4:], h.Seq)
	binary.BigEndian.PutUint32(w[8:], h.Ack)
	w[12] = uint8(n/4) << 4
	w[13] = uint8(h.Flags)
	binary.BigEndian.PutUint16(w[14:], h.Window)
	binary.BigEndian.PutUint16(w[16:], h.Checksum)
	binary.BigEndian.PutUint16(w[18:], h.Urgent)
	_, pad := h.optionLen()
	o := w[HeaderLen:]
	for i := range pad {
		o[i] = optNOP
	}
	o = o[pad:]
	if h.NSACK > 0 {
		o[0], o[1] = optSACK, uint8(2+8*h.NSACK)
		for i := range h.NSACK {
			binary.BigEndian.PutUint32(o[2+8*i:], h.SACK[i].Left)
			binary.BigEndian.PutUint32(o[6+8*i:], h.SACK[i].Right)
		}
		o = o[2+8*h.NSACK:]
	}
	copy(o, h.MPTCP[:h.MPTCPLen])
	return b
}

// Decode decodes a TCP header from the start of b and returns its length
// (the data offset). It returns wire.ErrTruncated when b ends before the
// header or an option does, and wire.ErrInvalid for a data offset below 5
// or an option whose length is impossible (below 2, or a SACK option that
// is not 2 + 8n bytes with n = 1..4; an MPTCP option below 3 bytes).
// Unknown options are skipped; the SACK blocks of a second SACK option
// replace the first's, and a second MPTCP option is skipped. The SACK
// blocks beyond NSACK are zero.
func (h *Header) Decode(b []byte) (int, error) {
	if len(b) < HeaderLen {
		return 0, wire.ErrTruncated
	}
	n := int(b[12]>>4) * 4
	switch {
	case n < HeaderLen:
		return 0, wire.ErrInvalid
	case n > len(b):
		return 0, wire.ErrTruncated
	}
	h.SrcPort = binary.BigEndian.Uint16(b[0:])
	h.DstPort = binary.BigEndian.Uint16(b[2:])
	h.Seq = binary.BigEndian.Uint32(b[4:])
	h.Ack = binary.BigEndian.Uint32(b[8:])
	h.Flags = Flags(b[13])
	h.Window = binary.BigEndian.Uint16(b[14:])
	h.Checksum = binary.BigEndian.Uint16(b[16:])
	h.Urgent = binary.BigEndian.Uint16(b[18:])
	if h.NSACK != 0 {
		h.SACK, h.NSACK = [MaxSACKBlocks]SACKBlock{}, 0
	}
	if h.MPTCPLen != 0 {
		h.MPTCP, h.MPTCPLen = [MaxOptionLen]byte{}, 0
	}
	return n, h.decodeOptions(b[HeaderLen:n])
}

func (h *Header) decodeOptions(o []byte) error {
	for len(o) > 0 {
		switch o[0] {
		case optEOL:
			return nil
		case optNOP:
			o = o[1:]
			continue
		}
		if len(o) < 2 {
			return wire.ErrTruncated
		}
		l := int(o[1])
		switch {
		case l < 2:
			return wire.ErrInvalid
		case l > len(o):
			return wire.ErrTruncated
		}
		switch o[0] {
		case optSACK:
			k := (l - 2) / 8
			if (l-2)%8 != 0 || k < 1 || k > MaxSACKBlocks {
				return wire.ErrInvalid
			}
			h.SACK = [MaxSACKBlocks]SACKBlock{} // a second option's blocks replace all the first's
			for i := range k {
				h.SACK[i] = SACKBlock{binary.BigEndian.Uint32(o[2+8*i:]), binary.BigEndian.Uint32(o[6+8*i:])}
			}
			h.NSACK = k
		case optMPTCP:
			if l < 3 {
				return wire.ErrInvalid
			}
			if h.MPTCPLen == 0 {
				h.MPTCPLen = copy(h.MPTCP[:], o[:l])
			}
		}
		o = o[l:]
	}
	return nil
}

// Checksum returns the TCP checksum of segment seg sent from src to dst
// over IPv6 (RFC 9293 §3.1 with the IPv6 pseudo-header of RFC 8200
// §8.1), with seg's checksum field taken as zero. length is the TCP
// length in the pseudo-header: len(seg), or more when the payload is
// phantom; phantom bytes count as zeros, which add nothing to the sum,
// so the result is the checksum of the segment with a zero-filled
// payload.
func Checksum(src, dst *[16]byte, seg []byte, length int) uint16 {
	var s uint64
	for i := 0; i < 16; i += 4 {
		s += uint64(binary.BigEndian.Uint32(src[i:])) + uint64(binary.BigEndian.Uint32(dst[i:]))
	}
	s += uint64(uint32(length)) + ProtoTCP
	for i := 0; i+1 < len(seg); i += 2 {
		if i == 16 {
			continue // the checksum field
		}
		s += uint64(binary.BigEndian.Uint16(seg[i:]))
	}
	if len(seg)%2 == 1 {
		s += uint64(seg[len(seg)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xFFFF + s>>16
	}
	return ^uint16(s)
}

// Classify reports whether pkt, from its IPv6 header on, is a TCP
// segment (next header TCP, no extension headers), and if so whether it
// carries payload (a data segment) or not (an ACK). It reads the fixed
// headers only, for hosts that count traffic.
func Classify(pkt []byte) (isTCP, data bool) {
	if len(pkt) < wire.IPv6Len+HeaderLen || pkt[6] != ProtoTCP {
		return false, false
	}
	payloadLen := int(binary.BigEndian.Uint16(pkt[4:]))
	return true, payloadLen > int(pkt[wire.IPv6Len+12]>>4)*4
}
