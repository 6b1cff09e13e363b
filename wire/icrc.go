package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// ICRCLen is the length of the invariant CRC that ends every complete MRC
// packet.
const ICRCLen = 4

// ICRC definition, from the spec (IBTA Annex A17, RoCEv2, as Linux rxe
// computes it in rxe_icrc.c): CRC-32 (IEEE 802.3 polynomial, reflected,
// as hash/crc32 computes it) over 8 bytes of 0xFF standing for the masked
// LRH, the IPv6 header, the UDP header, the BTH and the rest of the packet
// up to the ICRC, with the fields routers may change masked to all ones:
// traffic class, flow label and hop limit of the IPv6 header, the UDP
// checksum, and BTH byte 4 (Resv8a, which carries FECN/BECN). The result
// is stored little-endian, like an Ethernet FCS.
//
// Our extension: the IPv6 header is the one a plain IPv6|UDP packet to the
// final destination would have: destination = the final destination,
// payload length = the UDP length, next header = UDP. For a plain packet
// that is the header on the wire, so the value matches rxe; for an
// inline-uSID packet it stays valid while switches shift the container
// and when an SRH is removed; for an encapsulated packet the header is the
// inner one, which decapsulation leaves alone.
const (
	icrcMasked = 0xFF // masked hop limit, BTH Resv8a, and UDP checksum bytes
	// icrcVarLen is the length of what ICRC builds on the stack: the
	// IPv6 header, the UDP header and the BTH, masked, and the bytes after
	// them up to the longest extension headers of a data packet, so that
	// one pass of the carry-less multiply covers all of a data packet's
	// headers. With the IPv6 header whole (its first, constant, bytes
	// included), an RDMA WRITE's headers are 80 bytes: five 16-byte steps
	// and no tail.
	icrcVarLen = IPv6Len + UDPLen + BTHLen + METHLen + TSETHLen + RETHLen + ImmDtLen
)

// icrcSeed is the CRC of the constant start of the ICRC input: the masked
// LRH.
var icrcSeed = crc32.Update(0, crc32.IEEETable, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})

// icrcIPv6Start is the IPv6 header's first word as the ICRC hashes it:
// version 6, traffic class and flow label masked.
const icrcIPv6Start = 0x6FFFFFFF

// ICRC returns the invariant CRC of a RoCEv2 datagram carried over IPv6
// from src to the final destination finalDst (see UDPChecksum). udp is the
// UDP header and everything after it up to, not including, the ICRC. It
// does not allocate: the masked headers are hashed from a stack copy
// (crcShort), the rest with hash/crc32; both use the CPU's carry-less
// multiply where it has one.
func ICRC(src, finalDst [16]byte, udp []byte) uint32 {
	crc, m := icrcHead(src, finalDst, udp)
	return crcRest(crc, udp[m:])
}

// icrcHead starts the ICRC of udp: it returns the CRC over the constant
// start, the IPv6 header, the masked UDP header and BTH and up to 28
// bytes after them (what udp has of them), and the number of udp's bytes
// it covered.
func icrcHead(src, finalDst [16]byte, udp []byte) (crc uint32, m int) {
	var h [icrcVarLen]byte
	udpLen := uint16(len(udp))
	if len(udp) >= UDPLen {
		udpLen = binary.BigEndian.Uint16(udp[udpOffLength:])
	}
	binary.BigEndian.PutUint32(h[:], icrcIPv6Start)
	binary.BigEndian.PutUint16(h[ipv6OffPayloadLen:], udpLen)
	h[ipv6OffNextHeader] = ProtoUDP
	h[ipv6OffHopLimit] = icrcMasked
	copy(h[ipv6OffSrc:], src[:])
	copy(h[ipv6OffDst:], finalDst[:])
	m = maskUDP(h[IPv6Len:], udp)
	return crcShort(icrcSeed, h[:IPv6Len+m]), m
}

// maskUDP copies the start of udp, as much as h holds (at least the UDP
// header and BTH), to h, masks the UDP checksum and BTH byte 4, and
// returns the number of bytes copied.
func maskUDP(h, udp []byte) int {
	n := copy(h, udp)
	if n >= UDPLen {
		h[udpOffChecksum], h[udpOffChecksum+1] = icrcMasked, icrcMasked
	}
	if n > UDPLen+bthOffResv8a {
		h[UDPLen+bthOffResv8a] = icrcMasked
	}
	return n
}

// icrcUDP continues an ICRC computation, crc, over the UDP datagram udp
// with the UDP checksum and BTH byte 4 masked.
func icrcUDP(crc uint32, udp []byte) uint32 {
	var h [UDPLen + BTHLen]byte
	n := maskUDP(h[:], udp)
	return crcRest(crcUpdate(crc, h[:n]), udp[n:])
}

// crcRest continues crc over p, the part of a datagram after its masked
// headers: with hash/crc32, which runs the CPU's carry-less multiplies
// over 64 bytes or more, and with crcUpdate below that, where hash/crc32
// would run the same table algorithm behind its dispatch (a SACK's rest
// is 40 bytes).
func crcRest(crc uint32, p []byte) uint32 {
	if len(p) < crcHardwareMin {
		return crcShort(crc, p)
	}
	return crc32.Update(crc, crc32.IEEETable, p)
}

// crcHardwareMin is the shortest input hash/crc32 hands to its
// carry-less multiply code on amd64; shorter ones it hashes with tables.
const crcHardwareMin = 64

// crcTables holds the slicing-by-8 tables for the IEEE polynomial: entry
// k of table j is the CRC of byte k followed by j zero bytes.
var crcTables = func() (t [8][256]uint32) {
	t[0] = *crc32.IEEETable
	for j := 1; j < 8; j++ {
		for k := range 256 {
			c := t[j-1][k]
			t[j][k] = c>>8 ^ t[0][byte(c)]
		}
	}
	return t
}()

// crcUpdate is crc32.Update(crc, crc32.IEEETable, p) in portable Go, for
// the short masked header copies: hash/crc32 makes its input escape to
// the heap, this does not.
func crcUpdate(crc uint32, p []byte) uint32 {
	t := &crcTables
	crc = ^crc
	for len(p) >= 8 {
		lo := crc ^ binary.LittleEndian.Uint32(p)
		hi := binary.LittleEndian.Uint32(p[4:])
		crc = t[7][byte(lo)] ^ t[6][byte(lo>>8)] ^ t[5][byte(lo>>16)] ^ t[4][lo>>24] ^
			t[3][byte(hi)] ^ t[2][byte(hi>>8)] ^ t[1][byte(hi>>16)] ^ t[0][hi>>24]
		p = p[8:]
	}
	for _, v := range p {
		crc = t[0][byte(crc)^v] ^ crc>>8
	}
	return ^crc
}
