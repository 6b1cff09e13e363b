package wire

import (
	"encoding/binary"
	"math/bits"
)

// One pass over a payload for both checks: the UDP checksum's one's-
// complement sum and the ICRC's CRC-32 read the same bytes, and the
// sender copies those bytes into the packet first. Where the CPU has
// 512-bit carry-less multiplies (fused_amd64.s) sumCRC does all three in
// one pass over blocks of foldBlock bytes; elsewhere, and for the rest of
// a block, it runs copy, sum and crcRest one after the other. Either way
// the results are those of sum and crcRest (TestSumCRC, FuzzSumCRC).

// foldBlock is the bytes the fused loop takes per iteration: four 512-bit
// registers, each folding four 128-bit CRC lanes.
const foldBlock = 256

// foldKeys are the carry-less multiplication constants of the fused loop.
// Folding a 128-bit lane (lo, hi) of the reflected CRC over d bytes is
// clmul(lo, k(8d+32)) ^ clmul(hi, k(8d-32)), with k(e) = x^e mod P,
// bit-reflected and shifted left by one (the product of two reflected
// 64-bit values lands one bit low).
type foldKeys struct {
	k256, k192, k128, k64 [2]uint64 // folds over 256, 192, 128 and 64 bytes
	last                  [4][2]uint64
	// last folds the four lanes of the final 64 bytes onto the fourth:
	// over 48, 32 and 16 bytes, and the fourth not at all.
}

var crcKeys = func() (k foldKeys) {
	pair := func(d int) [2]uint64 { return [2]uint64{crcFoldKey(8*d + 32), crcFoldKey(8*d - 32)} }
	k.k256, k.k192, k.k128, k.k64 = pair(256), pair(192), pair(128), pair(64)
	k.last = [4][2]uint64{pair(48), pair(32), pair(16), {}}
	return k
}()

// crcFoldKey returns x^e mod P for the IEEE polynomial P, bit-reflected
// and shifted left by one.
func crcFoldKey(e int) uint64 {
	r := uint64(1)
	for range e {
		r <<= 1
		if r&(1<<32) != 0 {
			r ^= 0x104C11DB7
		}
	}
	return uint64(bits.Reverse32(uint32(r))) << 1
}

// sumCRC adds b to the one's-complement accumulator s (as sum does: b
// starts at an even offset of the checksummed data) and continues the
// CRC-32 crc over it (as crcRest does). If dst is not nil it also copies b
// into dst, which must be at least as long.
func sumCRC(dst []byte, s uint64, crc uint32, b []byte) (uint64, uint32) {
	if n := len(b) &^ (foldBlock - 1); n > 0 && fusedCRC {
		var d *byte
		if dst != nil {
			d = &dst[:n][0]
		}
		le, lo, hi := foldSumCRC(d, &b[0], n, crc, &crcKeys)
		s = add(s, uint64(bits.ReverseBytes16(fold(le))))
		// The lanes folded into one 128-bit value: a 16-byte message
		// with the same CRC as the n bytes, from a zero register.
		var v [16]byte
		binary.LittleEndian.PutUint64(v[:], lo)
		binary.LittleEndian.PutUint64(v[8:], hi)
		crc = crcUpdate(^uint32(0), v[:])
		b = b[n:]
		if dst != nil {
			dst = dst[n:]
		}
	}
	if dst != nil {
		copy(dst, b)
	}
	return sum(s, b), crcRest(crc, b)
}

// fuseMin is the shortest UDP datagram the checks take in one pass: the
// headers and ICRC around a block of payload.
const fuseMin = UDPLen + BTHLen + foldBlock + ICRCLen

// udpChecks returns UDPChecksum(src, finalDst, udp) and ICRC(src,
// finalDst, udp[:len(udp)-ICRCLen]) of a complete datagram, with one pass
// over the bytes both cover. len(udp) must be even and at least fuseMin.
func udpChecks(src, finalDst [16]byte, udp []byte) (uint16, uint32) {
	end := len(udp) - ICRCLen
	crc, m := icrcHead(src, finalDst, udp[:end])
	s := pseudoSum(&src, &finalDst, len(udp))
	s = sum(udpHead(s, udp), udp[UDPLen:m])
	s, crc = sumCRC(nil, s, crc, udp[m:end])
	return finish(sum(s, udp[end:])), crc
}
