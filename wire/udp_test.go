package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestUDP(t *testing.T) {
	checkCodec(t, UDP{SrcPort: 0xC000, DstPort: UDPPortRoCEv2, Length: 0x30, Checksum: 0xABCD}, []byte{
		0xC0, 0x00, // source port (EV[31:16])
		0x12, 0xB7, // destination port 4791
		0x00, 0x30, // length 48
		0xAB, 0xCD, // checksum
	})
}

func FuzzUDP(f *testing.F) { fuzzCodec(f, UDP{SrcPort: 1, DstPort: UDPPortRoCEv2, Length: 8}) }

// refChecksum is RFC 1071 done the plain way: 16-bit words, end-around
// carry, over the RFC 8200 §8.1 pseudo-header and the datagram with the
// checksum field zeroed.
func refChecksum(src, dst [16]byte, udp []byte) uint16 {
	var buf []byte
	buf = append(buf, src[:]...)
	buf = append(buf, dst[:]...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(udp)))
	buf = append(buf, 0, 0, 0, ProtoUDP)
	start := len(buf)
	buf = append(buf, udp...)
	if len(udp) >= UDPLen {
		buf[start+6], buf[start+7] = 0, 0
	}
	if len(buf)%2 == 1 {
		buf = append(buf, 0)
	}
	var s uint32
	for i := 0; i < len(buf); i += 2 {
		s += uint32(buf[i])<<8 | uint32(buf[i+1])
		s = s&0xFFFF + s>>16
	}
	c := ^uint16(s)
	if c == 0 {
		c = 0xFFFF
	}
	return c
}

func TestUDPChecksumKnown(t *testing.T) {
	var src, dst [16]byte
	src[15], dst[15] = 1, 1 // ::1 → ::1
	udp := []byte{
		0x00, 0x01, // source port 1
		0x00, 0x02, // destination port 2
		0x00, 0x08, // length 8, no data
		0x12, 0x34, // checksum field: ignored
	}
	// Pseudo-header 1+1 (addresses) + 8 (length) + 17 (next header) = 27,
	// header 1+2+8 = 11: sum 38 = 0x0026, checksum ^0x0026 = 0xFFD9.
	if c := UDPChecksum(src, dst, udp); c != 0xFFD9 {
		t.Errorf("UDPChecksum = %#x; want 0xffd9", c)
	}
	// A datagram whose sum is 0xFFFF (checksum 0) is sent with 0xFFFF
	// (RFC 768): pseudo-header 1+1+10+17 = 0x1D, header length 0x0A, data
	// 0xFFD8: sum 0xFFFF.
	udp = []byte{
		0x00, 0x00, // source port 0
		0x00, 0x00, // destination port 0
		0x00, 0x0A, // length 10
		0x00, 0x00, // checksum field
		0xFF, 0xD8, // data
	}
	if c := UDPChecksum(src, dst, udp); c != 0xFFFF {
		t.Errorf("UDPChecksum of a zero sum = %#x; want 0xffff", c)
	}
}

func TestUDPChecksumReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		var src, dst [16]byte
		for i := range src {
			src[i], dst[i] = byte(r.Uint32()), byte(r.Uint32())
		}
		n := r.IntN(2100)
		if r.IntN(8) == 0 {
			n = r.IntN(12) // short, including shorter than a header
		}
		udp := make([]byte, n)
		for i := range udp {
			udp[i] = byte(r.Uint32())
			if r.IntN(4) == 0 {
				udp[i] = 0xFF // many carries
			}
		}
		if got, want := UDPChecksum(src, dst, udp), refChecksum(src, dst, udp); got != want {
			t.Fatalf("len %d: UDPChecksum = %#x; reference %#x", n, got, want)
		}
	}
}

func TestUDPChecksumAllocs(t *testing.T) {
	udp := make([]byte, 1500)
	var a [16]byte
	if n := testing.AllocsPerRun(100, func() { _ = UDPChecksum(a, a, udp) }); n != 0 {
		t.Errorf("%v allocs", n)
	}
}

func BenchmarkUDPChecksum(b *testing.B) {
	for _, n := range []int{64, 1500, 4096 + 64} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			udp := make([]byte, n)
			var src, dst [16]byte
			b.ReportAllocs()
			for b.Loop() {
				_ = UDPChecksum(src, dst, udp)
			}
			reportPerPacket(b, n)
		})
	}
}
