package wire

import "math/bits"

// One pass over a payload for both checks: the UDP checksum's one's-
// complement sum and the ICRC's CRC-32 read the same bytes, and the
// sender copies those bytes into the packet first. Where the CPU has
// 512-bit carry-less multiplies (fused_amd64.s) sumCRC does all three in
// one pass over blocks of foldBlock bytes; elsewhere, and for the rest of
// a block, it runs copy, sum and crcRest one after the other. Either way
// the results are those of sum and crcRest (TestSumCRC, FuzzSumCRC). The
// headers' CRC takes 16-byte steps of the 128-bit carry-less multiply
// (crcShort) where the CPU has it.

// foldBlock is the bytes the fused loop takes per iteration: four 512-bit
// registers, each folding four 128-bit CRC lanes.
const foldBlock = 256

// foldKeys are the carry-less multiplication constants of the fused loop
// and of crcFold16. Folding a 128-bit lane (lo, hi) of the reflected CRC
// over d bytes is clmul(lo, k(8d+32)) ^ clmul(hi, k(8d-32)), with k(e) =
// x^e mod P, bit-reflected and shifted left by one (the product of two
// reflected 64-bit values lands one bit low). The last 128 bits reduce
// to the CRC with k(64) and Barrett's method: mu is floor(x^64 / P) and
// poly is P, both reflected (33 bits).
type foldKeys struct {
	k256, k192, k128, k64 [2]uint64 // folds over 256, 192, 128 and 64 bytes
	// last folds the four lanes of the final 64 bytes onto the fourth:
	// over 48, 32 and 16 bytes, and the fourth not at all.
	last   [4][2]uint64
	k16    [2]uint64 // folds over 16 bytes
	r5     [2]uint64 // {k(64), 0}
	polyMu [2]uint64 // {poly, mu}
}

var crcKeys = func() (k foldKeys) {
	pair := func(d int) [2]uint64 { return [2]uint64{crcFoldKey(8*d + 32), crcFoldKey(8*d - 32)} }
	k.k256, k.k192, k.k128, k.k64 = pair(256), pair(192), pair(128), pair(64)
	k.last = [4][2]uint64{pair(48), pair(32), pair(16), {}}
	k.k16 = pair(16)
	k.r5 = [2]uint64{crcFoldKey(64), 0}
	k.polyMu = [2]uint64{reflect33(crcPoly), reflect33(xPow64DivP())}
	return k
}()

// crcPoly is the IEEE polynomial, x^32 included.
const crcPoly = 0x104C11DB7

// crcFoldKey returns x^e mod P for the IEEE polynomial P, bit-reflected
// and shifted left by one.
func crcFoldKey(e int) uint64 {
	r := uint64(1)
	for range e {
		r <<= 1
		if r&(1<<32) != 0 {
			r ^= crcPoly
		}
	}
	return uint64(bits.Reverse32(uint32(r))) << 1
}

// xPow64DivP returns floor(x^64 / P) (33 bits), by long division.
func xPow64DivP() uint64 {
	var q uint64
	hi, lo := uint64(1), uint64(0) // the remainder, 65 bits: x^64 at first
	for d := 64; d >= 32; d-- {
		if d == 64 && hi&1 == 1 || d < 64 && lo>>d&1 == 1 {
			q |= 1 << (d - 32)
			lo ^= crcPoly << (d - 32)
			if d > 32 {
				hi ^= crcPoly >> (64 - (d - 32))
			}
		}
	}
	return q
}

// reflect33 reverses the low 33 bits of v.
func reflect33(v uint64) uint64 { return bits.Reverse64(v) >> 31 }

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
		var le uint64
		le, crc = foldSumCRC(d, &b[0], n, crc, &crcKeys)
		s = add(s, uint64(bits.ReverseBytes16(fold(le))))
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

// crcShort is crcUpdate for the short inputs the headers make, with the
// CPU's carry-less multiply over their 16-byte blocks where it has one.
func crcShort(crc uint32, p []byte) uint32 {
	if n := len(p) &^ 15; n > 0 && clmulCRC {
		crc = crcFold16(crc, &p[0], n, &crcKeys)
		p = p[n:]
	}
	return crcUpdate(crc, p)
}

// fuseMin is the shortest UDP datagram the checks take in one pass: the
// headers and ICRC around a block of payload.
const fuseMin = UDPLen + BTHLen + foldBlock + ICRCLen

// headChecks starts both checks of a UDP datagram of udpLen bytes whose
// headers (UDP header, BTH and extension headers) are udp[:at]: the
// one's-complement sum over the pseudo-header and those headers, and the
// ICRC over them masked. The payload's pass continues from both.
func headChecks(src, finalDst [16]byte, udp []byte, at, udpLen int) (uint64, uint32) {
	crc, m := icrcHead(src, finalDst, udp[:at])
	crc = crcRest(crc, udp[m:at])
	s := pseudoSum(&src, &finalDst, udpLen)
	return sum(udpHead(s, udp), udp[UDPLen:at]), crc
}

// udpChecks returns UDPChecksum(src, finalDst, udp) and ICRC(src,
// finalDst, udp[:len(udp)-ICRCLen]) of a complete datagram, with one pass
// over the bytes both cover. at is where its payload starts: the headers
// before it are hashed apart, so that the pass over a payload of whole
// blocks takes all of it (had it started with the headers' last bytes,
// the payload's last block would be left to the slower tail). len(udp)
// must be even and at least fuseMin; at must be even, at least
// UDPLen+BTHLen and at most len(udp)-ICRCLen.
func udpChecks(src, finalDst [16]byte, udp []byte, at int) (uint16, uint32) {
	end := len(udp) - ICRCLen
	s, crc := headChecks(src, finalDst, udp, at, len(udp))
	s, crc = sumCRC(nil, s, crc, udp[at:end])
	return finish(sum(s, udp[end:])), crc
}

// udpChecksCopy is udpChecks that also copies the n bytes at udp[at:]
// (a payload: at is even, at least UDPLen+BTHLen, and at+n at most
// len(udp)-ICRCLen) into dst in the same pass. It copies them whatever
// the checks will say.
func udpChecksCopy(dst []byte, src, finalDst [16]byte, udp []byte, at, n int) (uint16, uint32) {
	end := len(udp) - ICRCLen
	s, crc := headChecks(src, finalDst, udp, at, len(udp))
	// Whole blocks in the fused pass; the rest of the payload is copied,
	// and summed and CRCed with the pad and ICRC after it, so that the
	// sum's 16-bit lanes stay aligned when n is odd.
	k := n &^ (foldBlock - 1)
	s, crc = sumCRC(dst[:k], s, crc, udp[at:at+k])
	copy(dst[k:n], udp[at+k:at+n])
	crc = crcRest(crc, udp[at+k:end])
	return finish(sum(s, udp[at+k:])), crc
}
