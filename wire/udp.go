package wire

import (
	"encoding/binary"
	"math/bits"
)

// UDPLen is the length of the UDP header (RFC 768).
const UDPLen = 8

// UDPPortRoCEv2 is the RoCEv2 UDP destination port MRC uses (IBTA Annex
// A17; the MRC spec misprints it as 4971 in places, digest §3.2 [S]).
const UDPPortRoCEv2 = 4791

// UDP header layout, from the spec (RFC 768).
const (
	udpOffSrcPort  = 0 // source port; carries EV[31:16] in MRC
	udpOffDstPort  = 2 // destination port
	udpOffLength   = 4 // header + data length
	udpOffChecksum = 6 // checksum
)

// UDP is the UDP header (RFC 768).
type UDP struct {
	SrcPort  uint16
	DstPort  uint16
	Length   uint16
	Checksum uint16
}

// Append appends the UDPLen-byte encoding of h to b.
func (h *UDP) Append(b []byte) []byte {
	b, w := grow(b, UDPLen)
	h.put(w)
	return b
}

// put writes the header into w[:UDPLen].
func (h *UDP) put(w []byte) {
	w = w[:UDPLen]
	binary.BigEndian.PutUint16(w[udpOffSrcPort:], h.SrcPort)
	binary.BigEndian.PutUint16(w[udpOffDstPort:], h.DstPort)
	binary.BigEndian.PutUint16(w[udpOffLength:], h.Length)
	binary.BigEndian.PutUint16(w[udpOffChecksum:], h.Checksum)
}

// Decode decodes a UDP header from the start of b and returns UDPLen.
func (h *UDP) Decode(b []byte) (int, error) {
	if len(b) < UDPLen {
		return 0, ErrTruncated
	}
	b = b[:UDPLen]
	h.SrcPort = binary.BigEndian.Uint16(b[udpOffSrcPort:])
	h.DstPort = binary.BigEndian.Uint16(b[udpOffDstPort:])
	h.Length = binary.BigEndian.Uint16(b[udpOffLength:])
	h.Checksum = binary.BigEndian.Uint16(b[udpOffChecksum:])
	return UDPLen, nil
}

// UDPChecksum returns the UDP checksum of udp, the UDP header and data
// (len(udp) bytes, the checksum field taken as zero), over the IPv6
// pseudo-header of RFC 8200 §8.1: src, finalDst, the length and next
// header 17. finalDst is the final destination: the last segment when a
// routing header or a uSID container steers the packet, which is the
// address the receiver sees. A zero result is returned as 0xFFFF, as it is
// sent (RFC 768). It does not allocate.
func UDPChecksum(src, finalDst [16]byte, udp []byte) uint16 {
	s := pseudoSum(&src, &finalDst, len(udp))
	if len(udp) >= UDPLen {
		s = sum(udpHead(s, udp), udp[UDPLen:])
	} else {
		s = sum(s, udp)
	}
	return finish(s)
}

// udpHead adds the UDP header at the start of udp, its checksum field as
// zero, to s.
func udpHead(s uint64, udp []byte) uint64 {
	return add(s, binary.BigEndian.Uint64(udp)&^0xFFFF)
}

// finish turns an accumulated sum into the checksum to send.
func finish(s uint64) uint16 {
	c := ^fold(s)
	if c == 0 {
		return 0xFFFF
	}
	return c
}

// pseudoSum returns the sum of the IPv6 pseudo-header for a UDP datagram
// of n bytes.
func pseudoSum(src, dst *[16]byte, n int) uint64 {
	s := add(binary.BigEndian.Uint64(src[:8]), binary.BigEndian.Uint64(src[8:]))
	s = add(s, binary.BigEndian.Uint64(dst[:8]))
	s = add(s, binary.BigEndian.Uint64(dst[8:]))
	return add(s, uint64(n)+ProtoUDP)
}

// add is one's-complement addition of 64-bit words (end-around carry).
func add(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	return s + c // cannot carry again: s <= 2^64-2 when c is 1
}

// sum adds the 16-bit big-endian words of b to the one's-complement
// accumulator s; an odd last byte is padded with a zero byte (RFC 1071).
// Lanes of 16 bits stay aligned to the start of b, so b must start at an
// even offset of the checksummed data.
//
// The bulk is summed as little-endian 32-bit words into four independent
// 64-bit accumulators, which need no carries and no byte swaps: a
// one's-complement sum of byte-swapped words is the byte-swapped sum
// (RFC 1071 §2(B)), so the folded result is swapped once at the end.
func sum(s uint64, b []byte) uint64 {
	for len(b) > sumChunk {
		s, b = sum(s, b[:sumChunk]), b[sumChunk:]
	}
	var a0, a1, a2, a3 uint64
	for len(b) >= 32 {
		a0 += uint64(binary.LittleEndian.Uint32(b))
		a1 += uint64(binary.LittleEndian.Uint32(b[4:]))
		a2 += uint64(binary.LittleEndian.Uint32(b[8:]))
		a3 += uint64(binary.LittleEndian.Uint32(b[12:]))
		a0 += uint64(binary.LittleEndian.Uint32(b[16:]))
		a1 += uint64(binary.LittleEndian.Uint32(b[20:]))
		a2 += uint64(binary.LittleEndian.Uint32(b[24:]))
		a3 += uint64(binary.LittleEndian.Uint32(b[28:]))
		b = b[32:]
	}
	for len(b) >= 8 {
		a0 += uint64(binary.LittleEndian.Uint32(b))
		a1 += uint64(binary.LittleEndian.Uint32(b[4:]))
		b = b[8:]
	}
	le := add(add(a0, a1), add(a2, a3))
	s = add(s, uint64(bits.ReverseBytes16(fold(le))))
	if len(b) >= 4 {
		s = add(s, uint64(binary.BigEndian.Uint32(b)))
		b = b[4:]
	}
	if len(b) >= 2 {
		s = add(s, uint64(binary.BigEndian.Uint16(b)))
		b = b[2:]
	}
	if len(b) == 1 {
		s = add(s, uint64(b[0])<<8)
	}
	return s
}

// sumChunk bounds the bytes sum adds in one pass, so that no accumulator
// can overflow (each takes one 32-bit word of every 16 bytes). It is a
// multiple of 32, keeping the lanes aligned.
const sumChunk = 1 << 30

// fold reduces a 64-bit one's-complement sum to 16 bits.
func fold(s uint64) uint16 {
	s = s>>32 + s&0xFFFFFFFF
	s = s>>32 + s&0xFFFFFFFF
	s = s>>16 + s&0xFFFF
	s = s>>16 + s&0xFFFF
	return uint16(s)
}
