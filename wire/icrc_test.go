package wire

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"
)

// icrcIPv4 is the RoCEv2 ICRC of an IPv4 datagram as Linux rxe computes
// it: the IPv4 header with TOS, TTL and header checksum masked to ones,
// then the same UDP/BTH rule as over IPv6. Only the IPv4 masking is here;
// the rest is the package's.
func icrcIPv4(ip4, udp []byte) uint32 {
	h := slices.Clone(ip4)
	h[1] = 0xFF                                                             // TOS
	h[8] = 0xFF                                                             // TTL
	h[10], h[11] = 0xFF, 0xFF                                               // header checksum
	crc := crc32.Update(0, crc32.IEEETable, slices.Repeat([]byte{0xFF}, 8)) // masked LRH
	crc = crc32.Update(crc, crc32.IEEETable, h)
	return icrcUDP(crc, udp)
}

// TestICRCCapturedCNP checks the CRC core against a packet captured from
// real hardware: a RoCEv2 CNP sent by a ConnectX-4 Lx, from the public
// scapy test suite (test/contrib/roce.uts, "RoCE CNP captured on
// ConnectX-4 Lx"). It was IPv4, so the test masks the IPv4 header itself;
// the UDP and BTH masking, the CRC and the byte order are the package's.
func TestICRCCapturedCNP(t *testing.T) {
	frame := unhex(t, `
		e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2
		003c 718c 4000 4011 9161 0a00 1101 0a00
		1201 0000 12b7 0028 0000 8100 ffff 4000
		0118 0000 0000 0000 0000 0000 0000 0000
		0000 0000 0000 82fd 002a`)
	ip4 := frame[14:34]    // IPv4 header, 20 bytes
	udp := frame[34:70]    // UDP header, BTH (CNP, BECN set in Resv8a), 16 bytes of CNP padding
	stored := frame[70:74] // ICRC as sent
	want := binary.LittleEndian.Uint32(stored)
	if want != 0x2a00fd82 {
		t.Fatalf("stored ICRC %#x", want)
	}
	if got := icrcIPv4(ip4, udp); got != want {
		t.Errorf("ICRC = %#08x; the ConnectX-4 Lx sent %#08x", got, want)
	}
	// Resv8a (BECN here) and the UDP checksum are masked: changing them
	// must not matter.
	u := slices.Clone(udp)
	u[UDPLen+bthOffResv8a] = 0x80
	u[udpOffChecksum] = 0x12
	if got := icrcIPv4(ip4, u); got != want {
		t.Errorf("masked fields changed the ICRC: %#08x", got)
	}
}

// refICRC6 follows rxe_icrc.c for a plain IPv6 packet: copy the IPv6,
// UDP and BTH headers, mask them, and CRC everything after 8 bytes of
// 0xFF. hdr is the IPv6 header as sent.
func refICRC6(hdr, udp []byte) uint32 {
	ps := slices.Repeat([]byte{0xFF}, 8)
	ps = append(ps, hdr...)
	ps[8] |= 0x0F                            // traffic class[7:4]
	ps[9], ps[10], ps[11] = 0xFF, 0xFF, 0xFF // traffic class[3:0], flow label
	ps[8+7] = 0xFF                           // hop limit
	ps = append(ps, udp...)
	ps[48+6], ps[48+7] = 0xFF, 0xFF // UDP checksum
	ps[56+4] = 0xFF                 // BTH Resv8a
	return crc32.ChecksumIEEE(ps)
}

// randomDatagram returns a plain IPv6 header and a UDP datagram (without
// ICRC) carrying a BTH and n more bytes.
func randomDatagram(r *rand.Rand, n int) (IPv6, []byte) {
	ip := IPv6{TrafficClass: uint8(r.Uint32()), FlowLabel: r.Uint32(), NextHeader: ProtoUDP, HopLimit: uint8(r.Uint32())}
	for i := range ip.Src {
		ip.Src[i], ip.Dst[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	udp := make([]byte, UDPLen+BTHLen+n)
	for i := range udp {
		udp[i] = byte(r.Uint32())
	}
	binary.BigEndian.PutUint16(udp[udpOffLength:], uint16(len(udp)+ICRCLen))
	ip.PayloadLen = uint16(len(udp) + ICRCLen)
	return ip, udp
}

func TestICRCReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		ip, udp := randomDatagram(r, r.IntN(600))
		hdr := ip.Append(nil)
		if got, want := ICRC(ip.Src, ip.Dst, udp), refICRC6(hdr, udp); got != want {
			t.Fatalf("ICRC = %#x; rxe-style reference %#x", got, want)
		}
	}
}

func TestICRCCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ip, udp := randomDatagram(r, 40)
	base := ICRC(ip.Src, ip.Dst, udp)
	for i := range udp {
		u := slices.Clone(udp)
		u[i] ^= byte(1 + r.IntN(255))
		masked := i == udpOffChecksum || i == udpOffChecksum+1 || i == UDPLen+bthOffResv8a
		if changed := ICRC(ip.Src, ip.Dst, u) != base; changed == masked {
			t.Errorf("flipping UDP byte %d: changed = %v", i, changed)
		}
	}
	for i := range 16 {
		s, d := ip.Src, ip.Dst
		s[i] ^= 0x10
		d[i] ^= 0x01
		if ICRC(s, ip.Dst, udp) == base || ICRC(ip.Src, d, udp) == base {
			t.Errorf("flipping address byte %d does not change the ICRC", i)
		}
	}
	// Traffic class, flow label and hop limit are masked: the rxe-style
	// reference agrees whatever they hold.
	for range 20 {
		ip2 := ip
		ip2.TrafficClass, ip2.FlowLabel, ip2.HopLimit = uint8(r.Uint32()), r.Uint32(), uint8(r.Uint32())
		if refICRC6(ip2.Append(nil), udp) != base {
			t.Fatal("a masked IPv6 field changed the reference ICRC")
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = ICRC(ip.Src, ip.Dst, udp) }); n != 0 {
		t.Errorf("%v allocs", n)
	}
}

func TestCRCUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for n := range 100 {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		seed := r.Uint32()
		if got, want := crcUpdate(seed, p), crc32.Update(seed, crc32.IEEETable, p); got != want {
			t.Fatalf("len %d: crcUpdate = %#x; hash/crc32 %#x", n, got, want)
		}
	}
}

func TestICRCShort(t *testing.T) {
	var a [16]byte
	for n := range UDPLen + BTHLen + 2 {
		_ = ICRC(a, a, make([]byte, n)) // must not panic
	}
}

func BenchmarkICRC(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	ip, udp := randomDatagram(r, 4096+METHLen+RETHLen)
	b.ReportAllocs()
	for b.Loop() {
		_ = ICRC(ip.Src, ip.Dst, udp)
	}
	reportPerPacket(b, IPv6Len+len(udp))
}
