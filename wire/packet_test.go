package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// Addresses of the test fabric: F3216, block fcbb:bb00::/32.
var (
	testSrc   = [16]byte{0xfc, 0xbb, 0xbb, 0x00, 0x02, 0x02}               // sender NIC fcbb:bb00:202::
	testNIC   = [16]byte{0xfc, 0xbb, 0xbb, 0x00, 0x01, 0x01}               // receiver NIC fcbb:bb00:101::
	testBlock = [16]byte{0xfc, 0xbb, 0xbb, 0x00}                           // locator block
	testPath  = F3216.Container(testBlock, 0x0020, 0x0010, 0x0022, 0x0101) // T0, T1, T0, NIC
)

// encapsulation is one of the packet shapes of the package doc.
type encapsulation int

const (
	plain      encapsulation = iota // IPv6 | UDP
	inlineUSID                      // IPv6(uSID container) | UDP
	inlineSRH                       // IPv6(uSID container) | SRH | UDP
	encapUSID                       // IPv6(uSID container) | IPv6 | UDP
	encapSRH                        // IPv6(uSID container) | SRH | IPv6 | UDP
)

var encapsulations = []encapsulation{plain, inlineUSID, inlineSRH, encapUSID, encapSRH}

func (e encapsulation) String() string {
	return [...]string{"plain", "inlineUSID", "inlineSRH", "encapUSID", "encapSRH"}[e]
}

// kinds lists one packet of every kind: each opcode, data with and
// without TSETH.
type kind struct {
	op Opcode
	ts bool
}

var kinds = func() []kind {
	var ks []kind
	for _, op := range []Opcode{OpWriteFirst, OpWriteMiddle, OpWriteLast, OpWriteLastImm, OpWriteOnly, OpWriteOnlyImm} {
		ks = append(ks, kind{op, false}, kind{op, true})
	}
	for _, op := range []Opcode{OpAck, OpEndpointRequest, OpEndpointResponse, OpSACK, OpNACK, OpProbe} {
		ks = append(ks, kind{op, false})
	}
	return ks
}()

func (k kind) String() string {
	if k.ts {
		return k.op.String() + "+TS"
	}
	return k.op.String()
}

// testPacket returns a packet of kind k in encapsulation e, and its
// payload (1021 bytes for data packets, so the pad is 3).
func testPacket(k kind, e encapsulation) (Packet, []byte) {
	p := Packet{
		IP:  IPv6{TrafficClass: 4<<2 | uint8(ECT0), HopLimit: 64, Src: testSrc, Dst: testNIC},
		UDP: UDP{DstPort: UDPPortRoCEv2},
		BTH: BTH{Opcode: k.op, PKey: PKeyDefault, DestQP: 0x1234, AckReq: true, TS: k.ts, PSN: 0x100},
	}
	switch e {
	case inlineUSID, inlineSRH:
		p.IP.Dst = testPath
		p.FinalDst = F3216.Final(testPath)
	case encapUSID, encapSRH:
		p.Encap = true
		p.Outer = IPv6{TrafficClass: 4<<2 | uint8(ECT0), HopLimit: 64, Src: testSrc, Dst: testPath}
	}
	if e == inlineSRH || e == encapSRH {
		p.HasSRH = true
		p.SRH = SRH{N: 2, SegmentsLeft: 1, Tag: 9}
		p.SRH.Segments[0], p.SRH.Segments[1] = testNIC, testPath
		p.FinalDst = [16]byte{}
	}
	p.SetEV(0xC0DE0123)
	var payload []byte
	switch {
	case k.op.IsData():
		p.METH = METH{RQMSN: 3, MSN: 4}
		if k.ts {
			p.TSETH = TSETH{TxTimestamp: 0x7777, FType: TSETHFType}
		}
		p.RETH = RETH{VA: 0x7F0000001000, RKey: 0xAABB, DMALen: 1 << 20}
		if k.op.HasImm() {
			p.Imm = 0x01020304
		}
		payload = make([]byte, 1021)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		p.PayloadLen = len(payload)
	case k.op == OpAck:
		p.AETH = AETH{Syndrome: AETHAck, MSN: 99}
	case k.op == OpSACK:
		p.SACK = goldenSACK
	case k.op == OpNACK:
		p.NACK = goldenNACK
	case k.op == OpProbe:
		p.Probe = goldenProbe
	case k.op == OpEndpointRequest:
		p.EPReq = goldenEPReq
		p.BTH.DestQP = QPNEndpoint
	case k.op == OpEndpointResponse:
		p.EPResp = goldenEPResp
		p.BTH.DestQP = QPNEndpoint
	}
	return p, payload
}

// wireFields returns p without the fields AppendPacket computes and Decode
// derives, for comparing an encoded packet with its decoding.
func wireFields(p Packet) Packet {
	p.Outer.PayloadLen, p.Outer.NextHeader = 0, 0
	p.SRH.NextHeader, p.SRH.HdrExtLen, p.SRH.LastEntry = 0, 0, 0
	p.IP.PayloadLen, p.IP.NextHeader = 0, 0
	p.UDP.Length, p.UDP.Checksum = 0, 0
	if !p.Trimmed {
		p.BTH.PadCnt = 0
	}
	p.FinalDst = [16]byte{}
	p.Payload = nil
	p.ICRC, p.HasICRC = 0, false
	return p
}

func TestPacketRoundTrip(t *testing.T) {
	for _, e := range encapsulations {
		for _, k := range kinds {
			t.Run(fmt.Sprint(e, "/", k), func(t *testing.T) {
				p, payload := testPacket(k, e)
				b := AppendPacket(nil, &p, payload)
				if len(b) != p.Len() {
					t.Errorf("encoded %d bytes; Len says %d", len(b), p.Len())
				}
				var q Packet
				if err := q.Decode(b); err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if !reflect.DeepEqual(wireFields(q), wireFields(p)) {
					t.Errorf("Decode:\n got %+v\nwant %+v", wireFields(q), wireFields(p))
				}
				if !bytes.Equal(q.Payload, payload) || q.PayloadLen != len(payload) || !q.HasICRC || q.Trimmed {
					t.Errorf("payload %d/%d bytes, HasICRC %v, Trimmed %v", len(q.Payload), q.PayloadLen, q.HasICRC, q.Trimmed)
				}
				if e == inlineUSID {
					if q.Final() != testPath {
						t.Errorf("Final before ResolveUSID = %x", q.Final())
					}
					q.ResolveUSID(F3216) // mid-path view: the container is still whole
				}
				if q.Final() != testNIC {
					t.Errorf("Final after Decode = %x", q.Final())
				}
				if err := q.Verify(b); err != nil {
					t.Errorf("Verify: %v", err)
				}
				if q.EV() != 0xC0DE0123 {
					t.Errorf("EV = %v", q.EV())
				}
				if n := testing.AllocsPerRun(50, func() { _ = q.Decode(b) }); n != 0 {
					t.Errorf("Decode: %v allocs", n)
				}
				if n := testing.AllocsPerRun(50, func() { _ = q.Verify(b) }); n != 0 {
					t.Errorf("Verify: %v allocs", n)
				}
				buf := make([]byte, 0, 2*len(b))
				if n := testing.AllocsPerRun(50, func() { _ = AppendPacket(buf, &p, payload) }); n != 0 {
					t.Errorf("AppendPacket: %v allocs", n)
				}
			})
		}
	}
}

// TestPacketGoldenPlain assembles a plain WRITE_ONLY packet by hand and
// compares it with AppendPacket: header order, lengths, pad, checksum and
// ICRC placement.
func TestPacketGoldenPlain(t *testing.T) {
	p := Packet{
		IP:   IPv6{TrafficClass: 0x12, HopLimit: 64, Src: testSrc, Dst: testNIC},
		UDP:  UDP{DstPort: UDPPortRoCEv2},
		BTH:  BTH{Opcode: OpWriteOnly, PKey: 0xFFFF, DestQP: 0x000011, PSN: 0x000022},
		METH: METH{MSN: 1},
		RETH: RETH{VA: 0x1000, RKey: 0x55, DMALen: 5},
	}
	p.SetEV(0xABCD1234)
	payload := []byte("hello")
	want := []byte{
		0x61,       // version 6 | traffic class[7:4] = 1
		0x20,       // traffic class[3:0] = 2 | flow label[19:16] = 0
		0x12, 0x34, // flow label[15:0] = EV[15:0]
		0x00, 0x34, // payload length 52 = UDP 8 + BTH 12 + METH 4 + RETH 16 + payload 5 + pad 3 + ICRC 4
		0x11, 0x40, // next header UDP, hop limit 64
	}
	want = append(want, testSrc[:]...)
	want = append(want, testNIC[:]...)
	want = append(want,
		0xAB, 0xCD, // UDP source port EV[31:16]
		0x12, 0xB7, // destination port 4791
		0x00, 0x34, // UDP length 52
		0x00, 0x00, // checksum, patched below
		0xCA,       // BTH opcode WRITE_ONLY
		0x30,       // PadCnt 3
		0xFF, 0xFF, // P_Key
		0x00,             // Resv8a
		0x00, 0x00, 0x11, // DestQP
		0x00,             // A, Rtx, TS clear
		0x00, 0x00, 0x22, // PSN
		0x00, 0x00, 0x00, 0x01, // METH: RQMSN 0, MSN 1
		0, 0, 0, 0, 0, 0, 0x10, 0x00, // RETH VA
		0x00, 0x00, 0x00, 0x55, // R_Key
		0x00, 0x00, 0x00, 0x05, // DMA length
		'h', 'e', 'l', 'l', 'o', // payload
		0, 0, 0, // pad
		0, 0, 0, 0, // ICRC, patched below
	)
	udpLen := len(want) - IPv6Len
	if udpLen != 0x34 {
		t.Fatalf("the hand-written packet has UDP length %d", udpLen)
	}
	udp := want[IPv6Len:]
	binary.LittleEndian.PutUint32(udp[udpLen-4:], refICRC6(want[:IPv6Len], udp[:udpLen-4]))
	binary.BigEndian.PutUint16(udp[6:], refChecksum(testSrc, testNIC, udp))
	if got := AppendPacket(nil, &p, payload); !bytes.Equal(got, want) {
		t.Errorf("AppendPacket:\n got %x\nwant %x", got, want)
	}
}

// TestPacketGoldenEncapSRH checks the header chain of an encapsulated
// packet with an SRH byte by byte.
func TestPacketGoldenEncapSRH(t *testing.T) {
	p, _ := testPacket(kind{OpAck, false}, encapSRH)
	b := AppendPacket(nil, &p, nil)
	udpLen := UDPLen + BTHLen + AETHLen + ICRCLen // 28
	hdr := func(ip IPv6, plen int, nh uint8) []byte {
		ip.PayloadLen, ip.NextHeader = uint16(plen), nh
		return ip.Append(nil)
	}
	want := hdr(p.Outer, 40+40+udpLen, ProtoRouting) // outer: SRH 40 + inner 40 + UDP
	want = append(want,
		ProtoIPv6,        // SRH next header 41
		4,                // hdr ext len: 2 segments
		4, 1, 1, 0, 0, 9, // routing type 4, segments left 1, last entry 1, flags, tag 9
	)
	want = append(want, testNIC[:]...)
	want = append(want, testPath[:]...)
	want = append(want, hdr(p.IP, udpLen, ProtoUDP)...)
	if !bytes.Equal(b[:len(want)], want) {
		t.Errorf("header chain:\n got %x\nwant %x", b[:len(want)], want)
	}
	if got := binary.BigEndian.Uint16(b[len(want)+udpOffLength:]); int(got) != udpLen {
		t.Errorf("UDP length %d", got)
	}
	if len(b) != len(want)+udpLen {
		t.Errorf("length %d; want %d", len(b), len(want)+udpLen)
	}
	// The ICRC and checksum are over the inner header only.
	udp := b[len(want):]
	if c := binary.BigEndian.Uint16(udp[6:]); c != refChecksum(testSrc, testNIC, udp) {
		t.Errorf("checksum %#x", c)
	}
	inner := b[len(want)-IPv6Len : len(want)]
	if c := binary.LittleEndian.Uint32(udp[udpLen-4:]); c != refICRC6(inner, udp[:udpLen-4]) {
		t.Errorf("ICRC %#x", c)
	}
}

func TestPacketPhantom(t *testing.T) {
	for _, e := range encapsulations {
		p, payload := testPacket(kind{OpWriteLastImm, true}, e)
		full := AppendPacket(nil, &p, payload)
		phantom := AppendPacket(nil, &p, nil) // PayloadLen 1021 > 0 bytes given
		if len(phantom) != len(full)-len(payload)-3-ICRCLen {
			t.Fatalf("%v: phantom is %d bytes", e, len(phantom))
		}
		// The headers are those of the full packet, with checksum 0.
		udpOff := len(phantom) - (UDPLen + OpWriteLastImm.HeaderLen(true))
		want := slices.Clone(full[:len(phantom)])
		want[udpOff+6], want[udpOff+7] = 0, 0
		if !bytes.Equal(phantom, want) {
			t.Errorf("%v: phantom headers\n got %x\nwant %x", e, phantom, want)
		}
		if p.Len() != len(full) {
			t.Errorf("%v: Len %d; full packet %d", e, p.Len(), len(full))
		}
		var q Packet
		if err := q.Decode(phantom); err != nil {
			t.Fatalf("%v: Decode: %v", e, err)
		}
		if q.PayloadLen != 1021 || len(q.Payload) != 0 || q.HasICRC || q.Trimmed || q.UDP.Checksum != 0 {
			t.Errorf("%v: PayloadLen %d, %d bytes, HasICRC %v, Trimmed %v, checksum %#x",
				e, q.PayloadLen, len(q.Payload), q.HasICRC, q.Trimmed, q.UDP.Checksum)
		}
		if err := q.Verify(phantom); err != ErrTruncated {
			t.Errorf("%v: Verify = %v; want ErrTruncated", e, err)
		}
		if n := testing.AllocsPerRun(50, func() { _ = q.Decode(phantom) }); n != 0 {
			t.Errorf("%v: Decode: %v allocs", e, n)
		}
		// Partly present: some payload, or all of it but part of the ICRC.
		hdrEnd := len(phantom)
		for _, cut := range []int{hdrEnd + 10, hdrEnd + 1021, hdrEnd + 1021 + 3 + 2} {
			if err := q.Decode(full[:cut]); err != nil {
				t.Fatalf("%v: Decode of %d bytes: %v", e, cut, err)
			}
			if len(q.Payload) != min(cut-hdrEnd, 1021) || q.PayloadLen != 1021 || q.HasICRC {
				t.Errorf("%v: cut at %d: %d payload bytes, HasICRC %v", e, cut, len(q.Payload), q.HasICRC)
			}
			if !bytes.Equal(q.Payload, payload[:len(q.Payload)]) {
				t.Errorf("%v: payload bytes wrong", e)
			}
		}
	}
}

func TestPacketTrimmedEncoding(t *testing.T) {
	p, _ := testPacket(kind{OpWriteMiddle, false}, plain)
	p.Trimmed = true
	p.BTH.PadCnt = 2 // kept as given
	b := AppendPacket(nil, &p, []byte("ignored"))
	if len(b) != IPv6Len+UDPLen+OpWriteMiddle.HeaderLen(false) || len(b) != p.Len() {
		t.Fatalf("trimmed packet is %d bytes", len(b))
	}
	var q Packet
	if err := q.Decode(b); err != nil {
		t.Fatal(err)
	}
	if !q.Trimmed || q.PayloadLen != 0 || q.HasICRC || q.BTH.PadCnt != 2 {
		t.Errorf("Trimmed %v PayloadLen %d HasICRC %v PadCnt %d", q.Trimmed, q.PayloadLen, q.HasICRC, q.BTH.PadCnt)
	}
	if err := q.Verify(b); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func TestPacketDecodeErrors(t *testing.T) {
	for _, e := range encapsulations {
		p, payload := testPacket(kind{OpSACK, false}, e)
		good := AppendPacket(nil, &p, payload)
		hdrEnd := len(good) - ICRCLen
		for i := range hdrEnd {
			var q Packet
			if err := q.Decode(good[:i]); err != ErrTruncated {
				t.Errorf("%v: Decode of %d header bytes = %v; want ErrTruncated", e, i, err)
			}
		}
	}
	p, _ := testPacket(kind{OpSACK, false}, encapSRH)
	good := AppendPacket(nil, &p, nil)
	srhOff, innerOff := IPv6Len, IPv6Len+40
	udpOff := innerOff + IPv6Len
	for _, tc := range []struct {
		name string
		mod  func(b []byte) []byte
		want error
	}{
		{"version 4", func(b []byte) []byte { b[0] = 0x45; return b }, ErrInvalid},
		{"outer length short", func(b []byte) []byte { b[5]--; return b }, ErrInvalid},
		{"outer length long", func(b []byte) []byte { b[5]++; return append(b, 0) }, ErrInvalid},
		{"inner length", func(b []byte) []byte { b[innerOff+5]--; return b }, ErrInvalid},
		{"UDP length", func(b []byte) []byte { b[udpOff+5]--; return b }, ErrInvalid},
		{"UDP length < 8", func(b []byte) []byte {
			b[5] = byte(40 + 40 + 4) // outer length agrees with a 4-byte UDP
			b[innerOff+5] = 4
			b[udpOff+4], b[udpOff+5] = 0, 4
			return b
		}, ErrInvalid},
		{"headers beyond UDP", func(b []byte) []byte {
			n := UDPLen + BTHLen + 4 // room for a BTH and ICRC, not a SACK
			b[5] = byte(40 + 40 + n)
			b[innerOff+5] = byte(n)
			b[udpOff+5] = byte(n)
			return b
		}, ErrInvalid},
		{"pad beyond ICRC room", func(b []byte) []byte { b[udpOff+UDPLen+1] |= 0x10; return b }, ErrInvalid},
		{"TCP", func(b []byte) []byte { b[innerOff+6] = 6; return b }, ErrUnsupported},
		{"routing type 2", func(b []byte) []byte { b[srhOff+2] = 2; return b }, ErrUnsupported},
		{"SRH too long", func(b []byte) []byte { b[srhOff+4] = 20; return b }, ErrInvalid},
		{"hop-by-hop", func(b []byte) []byte { b[6] = 0; return b }, ErrUnsupported},
		{"opcode", func(b []byte) []byte { b[udpOff+UDPLen] = 0x04; return b }, ErrUnsupported},
	} {
		var q Packet
		if err := q.Decode(tc.mod(slices.Clone(good))); err != tc.want {
			t.Errorf("%s: Decode = %v; want %v", tc.name, err, tc.want)
		}
	}
	// Link-layer padding after the datagram is ignored.
	var q Packet
	if err := q.Decode(append(slices.Clone(good), 0, 0, 0, 0)); err != nil || !q.HasICRC {
		t.Errorf("trailing bytes: %v, HasICRC %v", err, q.HasICRC)
	}
	if err := q.Verify(good); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func TestPacketVerifyDetects(t *testing.T) {
	p, payload := testPacket(kind{OpWriteOnly, false}, plain)
	good := AppendPacket(nil, &p, payload)
	var q Packet
	for _, tc := range []struct {
		name string
		at   int
		want error
	}{
		{"payload", len(good) - 100, ErrChecksum},
		{"ICRC", len(good) - 1, ErrChecksum},
		{"UDP checksum", IPv6Len + 7, ErrChecksum},
		{"traffic class (not covered)", 1, nil},
		{"flow label (not covered)", 3, nil},
		{"hop limit (not covered)", 7, nil},
		{"BTH Resv8a", IPv6Len + UDPLen + 4, ErrChecksum},
	} {
		b := slices.Clone(good)
		b[tc.at] ^= 0x40
		if err := q.Decode(b); err != nil {
			t.Fatal(err)
		}
		if err := q.Verify(b); err != tc.want {
			t.Errorf("%s: Verify = %v; want %v", tc.name, err, tc.want)
		}
	}
	// A consistent checksum over a corrupt ICRC: the ICRC catches it.
	b := slices.Clone(good)
	b[len(b)-1] ^= 1
	binary.BigEndian.PutUint16(b[IPv6Len+6:], UDPChecksum(testSrc, testNIC, b[IPv6Len:]))
	if err := q.Decode(b); err != nil || q.Verify(b) != ErrICRC {
		t.Errorf("corrupt ICRC: Verify = %v", q.Verify(b))
	}
	// A zero checksum is not accepted (RFC 8200 §8.1).
	b = slices.Clone(good)
	b[IPv6Len+6], b[IPv6Len+7] = 0, 0
	if err := q.Decode(b); err != nil || q.Verify(b) != ErrChecksum {
		t.Errorf("zero checksum: Verify = %v", q.Verify(b))
	}
}

// TestPacketUSIDPath forwards packets along an F3216 path as uN switches
// do, shifting the outermost destination in place, and checks the
// checksum and ICRC on the way and at the end.
func TestPacketUSIDPath(t *testing.T) {
	for _, e := range []encapsulation{inlineUSID, encapUSID, encapSRH} {
		p, payload := testPacket(kind{OpWriteOnly, true}, e)
		b := AppendPacket(nil, &p, payload)
		var q Packet
		for hop := 0; ; hop++ {
			if !DecHopLimit(b) {
				t.Fatalf("%v: hop limit expired", e)
			}
			if err := q.Decode(b); err != nil {
				t.Fatal(err)
			}
			q.ResolveUSID(F3216) // what a switch knowing the format does
			if err := q.Verify(b); err != nil {
				t.Fatalf("%v: hop %d: Verify: %v", e, hop, err)
			}
			if !F3216.Shift(OuterDst(b)) {
				break
			}
		}
		if *OuterDst(b) != testNIC {
			t.Errorf("%v: arrived at %x", e, *OuterDst(b))
		}
		if OuterTrafficClass(b) != 4<<2|uint8(ECT0) || b[7] != 64-4 {
			t.Errorf("%v: TC %#x hop limit %d", e, OuterTrafficClass(b), b[7])
		}
		if e == inlineUSID {
			// At the NIC the destination is final: no format needed.
			if err := q.Decode(b); err != nil || q.Verify(b) != nil {
				t.Errorf("at the NIC: %v, %v", err, q.Verify(b))
			}
			// Mid-path without the format, the checksum is over the
			// wrong address.
			b2 := AppendPacket(nil, &p, payload)
			if err := q.Decode(b2); err != nil || q.Verify(b2) != ErrChecksum {
				t.Errorf("mid-path without ResolveUSID: Verify = %v", q.Verify(b2))
			}
			continue
		}
		inner, err := Decapsulate(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Decode(inner); err != nil || q.Encap || q.Verify(inner) != nil {
			t.Errorf("%v: after Decapsulate: %v, Encap %v, %v", e, err, q.Encap, q.Verify(inner))
		}
	}
}

func TestPacketSetEV(t *testing.T) {
	var p Packet
	p.Encap = true
	p.SetEV(0x89ABCDEF)
	if p.UDP.SrcPort != 0x89AB || p.IP.FlowLabel != 0xCDEF || p.Outer.FlowLabel != 0xCDEF || p.EV() != 0x89ABCDEF {
		t.Errorf("SetEV: %+v %+v %+v", p.UDP, p.IP, p.Outer)
	}
}

func TestPacketUnknownOpcode(t *testing.T) {
	p, _ := testPacket(kind{0x04, false}, plain)
	b := AppendPacket(nil, &p, []byte{1, 2, 3, 4})
	if len(b) != IPv6Len+UDPLen+BTHLen+4+ICRCLen {
		t.Errorf("unknown opcode: %d bytes", len(b))
	}
	var q Packet
	if err := q.Decode(b); err != ErrUnsupported {
		t.Errorf("Decode = %v", err)
	}
}

// FuzzPacket: Decode never panics; whatever decodes re-encodes to a
// packet that decodes to the same headers and verifies, and re-encoding
// that is byte-identical.
func FuzzPacket(f *testing.F) {
	for _, e := range encapsulations {
		for _, k := range kinds {
			p, payload := testPacket(k, e)
			if len(payload) > 0 {
				payload = payload[:5] // keep seeds small
				p.PayloadLen = 5
			}
			f.Add(AppendPacket(nil, &p, payload))
		}
		p, _ := testPacket(kind{OpWriteFirst, false}, e)
		f.Add(AppendPacket(nil, &p, nil)) // phantom
		p.Trimmed = true
		f.Add(AppendPacket(nil, &p, nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p, general Packet
		err := p.Decode(b)
		if gerr := general.decodeHeaders(b); gerr != err || !reflect.DeepEqual(general, p) {
			t.Fatalf("Decode and the general decoder differ: %v, %v\n%+v\n%+v", err, gerr, p, general)
		}
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("Decode: %v", err)
			}
			return
		}
		if len(p.Payload) > p.PayloadLen || p.PayloadLen < 0 || (p.Trimmed && (p.PayloadLen != 0 || p.HasICRC)) {
			t.Fatalf("payload %d of %d, Trimmed %v, HasICRC %v", len(p.Payload), p.PayloadLen, p.Trimmed, p.HasICRC)
		}
		verr := p.Verify(b) // must not panic
		if p.BTH.Opcode.IsData() {
			dst := make([]byte, p.PayloadLen)
			if err := p.VerifyInto(b, dst); err != verr || err == nil && !bytes.Equal(dst, p.Payload) {
				t.Fatalf("VerifyInto: %v (payload copied: %v), Verify: %v", err, bytes.Equal(dst, p.Payload), verr)
			}
		}
		b2 := AppendPacket(nil, &p, p.Payload)
		phantom := len(p.Payload) < p.PayloadLen
		want := p.Len()
		if phantom {
			want -= p.PayloadLen + pad(p.PayloadLen) + ICRCLen
		}
		if len(b2) != want {
			t.Fatalf("re-encoded %d bytes; want %d (Len %d)", len(b2), want, p.Len())
		}
		var p2 Packet
		if err := p2.Decode(b2); err != nil {
			t.Fatalf("re-decode: %v\n%x", err, b2)
		}
		if !reflect.DeepEqual(wireFields(p2), wireFields(p)) || p2.FinalDst != p.FinalDst || p2.PayloadLen != p.PayloadLen {
			t.Fatalf("re-decode:\n got %+v\nwant %+v", wireFields(p2), wireFields(p))
		}
		if phantom {
			if len(p2.Payload) != 0 || p2.HasICRC {
				t.Fatal("phantom re-encoded with payload")
			}
		} else {
			if !bytes.Equal(p2.Payload, p.Payload) || p2.HasICRC == p.Trimmed {
				t.Fatal("payload or ICRC lost")
			}
			if err := p2.Verify(b2); err != nil {
				t.Fatalf("re-encoded packet: Verify: %v", err)
			}
		}
		if b3 := AppendPacket(nil, &p2, p2.Payload); !bytes.Equal(b3, b2) {
			t.Fatalf("encoding not stable:\n%x\n%x", b2, b3)
		}
	})
}

func benchPacket(b *testing.B, op Opcode) (Packet, []byte) {
	p, _ := testPacket(kind{op, true}, encapSRH)
	payload := make([]byte, 4096)
	p.PayloadLen = len(payload)
	return p, payload
}

func BenchmarkDecodeData4K(b *testing.B) {
	p, payload := benchPacket(b, OpWriteMiddle)
	buf := AppendPacket(nil, &p, payload)
	var q Packet
	b.ReportAllocs()
	for b.Loop() {
		if err := q.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
	reportPerPacket(b, 0)
}

func BenchmarkDecodeVerifyData4K(b *testing.B) {
	p, payload := benchPacket(b, OpWriteMiddle)
	buf := AppendPacket(nil, &p, payload)
	var q Packet
	b.ReportAllocs()
	for b.Loop() {
		if q.Decode(buf) != nil || q.Verify(buf) != nil {
			b.Fatal("bad packet")
		}
	}
	reportPerPacket(b, len(buf))
}

func BenchmarkAppendData4K(b *testing.B) {
	p, payload := benchPacket(b, OpWriteMiddle)
	buf := make([]byte, 0, 8192)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPacket(buf[:0], &p, payload)
	}
	reportPerPacket(b, len(buf))
}

func BenchmarkAppendDataPhantom(b *testing.B) {
	p, _ := benchPacket(b, OpWriteMiddle)
	buf := make([]byte, 0, 8192)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPacket(buf[:0], &p, nil)
	}
	reportPerPacket(b, 0)
}

func BenchmarkAppendSACK(b *testing.B) {
	p, _ := testPacket(kind{OpSACK, false}, encapSRH)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPacket(buf[:0], &p, nil)
	}
	reportPerPacket(b, 0)
}

func BenchmarkDecodeSACK(b *testing.B) {
	p, _ := testPacket(kind{OpSACK, false}, encapSRH)
	buf := AppendPacket(nil, &p, nil)
	var q Packet
	b.ReportAllocs()
	for b.Loop() {
		_ = q.Decode(buf)
	}
	reportPerPacket(b, 0)
}
