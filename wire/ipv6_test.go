package wire

import (
	"bytes"
	"testing"
)

func goldenIPv6(t testing.TB) (IPv6, []byte) {
	h := IPv6{
		TrafficClass: 0xB9, // DSCP 46, ECT(1)
		FlowLabel:    0xABCDE,
		PayloadLen:   0x0100,
		NextHeader:   ProtoUDP,
		HopLimit:     64,
		Src:          addr(t, "20010db8000000000000000000000001"),
		Dst:          addr(t, "fcbbbb00000100020000000000000000"),
	}
	b := []byte{
		0x6B,       // version 6 (b7-4) | traffic class[7:4] = 0xB
		0x9A,       // traffic class[3:0] = 0x9 | flow label[19:16] = 0xA
		0xBC, 0xDE, // flow label[15:0]
		0x01, 0x00, // payload length 256
		0x11, // next header UDP
		0x40, // hop limit 64
	}
	b = append(b, h.Src[:]...) // source 2001:db8::1
	b = append(b, h.Dst[:]...) // destination fcbb:bb00:1:2::
	return h, b
}

func TestIPv6(t *testing.T) {
	h, b := goldenIPv6(t)
	checkCodec(t, h, b)
	if h.DSCP() != 46 || h.ECN() != ECT1 {
		t.Errorf("DSCP %d ECN %v", h.DSCP(), h.ECN())
	}
	h.SetECN(CE)
	h.SetDSCP(12)
	if h.TrafficClass != 12<<2|3 {
		t.Errorf("TrafficClass %#x", h.TrafficClass)
	}
	b[0] = 0x4B // version 4
	if n, err := h.Decode(b); n != 0 || err != ErrInvalid {
		t.Errorf("Decode of version 4 = %d, %v", n, err)
	}
}

func TestECNString(t *testing.T) {
	for e, want := range map[ECN]string{NotECT: "Not-ECT", ECT1: "ECT(1)", ECT0: "ECT(0)", CE: "CE", 4: "ECN(4)"} {
		if e.String() != want {
			t.Errorf("%d.String() = %q", e, e.String())
		}
	}
}

func TestRawAccessors(t *testing.T) {
	h, b := goldenIPv6(t)
	pkt := append(b, 1, 2, 3) // something after the header
	if d := OuterDst(pkt); d == nil || *d != h.Dst {
		t.Fatalf("OuterDst = %v", d)
	}
	OuterDst(pkt)[15] = 0x77 // aliases pkt
	if pkt[39] != 0x77 {
		t.Error("OuterDst does not alias the buffer")
	}
	if OuterTrafficClass(pkt) != 0xB9 || OuterECN(pkt) != ECT1 || OuterFlowLabel(pkt) != 0xABCDE {
		t.Errorf("TC %#x ECN %v flow %#x", OuterTrafficClass(pkt), OuterECN(pkt), OuterFlowLabel(pkt))
	}
	SetOuterDSCP(pkt, 4)
	if OuterTrafficClass(pkt) != 4<<2|1 {
		t.Errorf("after SetOuterDSCP: TC %#x", OuterTrafficClass(pkt))
	}
	if !MarkCE(pkt) || OuterECN(pkt) != CE || OuterTrafficClass(pkt) != 4<<2|3 {
		t.Errorf("after MarkCE: TC %#x", OuterTrafficClass(pkt))
	}
	SetOuterECN(pkt, NotECT)
	if MarkCE(pkt) || OuterECN(pkt) != NotECT {
		t.Error("MarkCE marked a Not-ECT packet")
	}
	SetOuterTrafficClass(pkt, 0xFF)
	var got IPv6
	if _, err := got.Decode(pkt); err != nil || got.TrafficClass != 0xFF || got.FlowLabel != 0xABCDE {
		t.Errorf("after SetOuterTrafficClass: %+v, %v (version or flow label damaged?)", got, err)
	}
	pkt[ipv6OffHopLimit] = 2
	if !DecHopLimit(pkt) || pkt[ipv6OffHopLimit] != 1 {
		t.Error("DecHopLimit 2 → 1")
	}
	if DecHopLimit(pkt) || pkt[ipv6OffHopLimit] != 1 {
		t.Error("DecHopLimit forwarded a packet with hop limit 1")
	}

	short := bytes.Clone(b[:IPv6Len-1])
	SetOuterTrafficClass(short, 0)
	SetOuterDSCP(short, 0)
	SetOuterECN(short, CE)
	if !bytes.Equal(short, b[:IPv6Len-1]) || OuterDst(short) != nil || OuterTrafficClass(short) != 0 ||
		OuterFlowLabel(short) != 0 || MarkCE(short) || DecHopLimit(short) {
		t.Error("raw accessors touched a short buffer")
	}
}

func TestDecapECN(t *testing.T) {
	// RFC 6040 §4.2, Figure 4: rows are the inner header, columns the
	// outer one (Not-ECT, ECT(0), ECT(1), CE); -1 is drop.
	want := map[ECN][4]int{
		NotECT: {int(NotECT), int(NotECT), int(NotECT), -1},
		ECT0:   {int(ECT0), int(ECT0), int(ECT1), int(CE)},
		ECT1:   {int(ECT1), int(ECT1), int(ECT1), int(CE)},
		CE:     {int(CE), int(CE), int(CE), int(CE)},
	}
	for inner, row := range want {
		for i, outer := range []ECN{NotECT, ECT0, ECT1, CE} {
			e, ok := DecapECN(outer, inner)
			if row[i] == -1 {
				if ok {
					t.Errorf("DecapECN(%v, %v) = %v; want drop", outer, inner, e)
				}
			} else if !ok || int(e) != row[i] {
				t.Errorf("DecapECN(%v, %v) = %v, %v; want %v", outer, inner, e, ok, ECN(row[i]))
			}
		}
	}
}

func FuzzIPv6(f *testing.F) {
	h, _ := goldenIPv6(f)
	fuzzCodec(f, h, IPv6{NextHeader: ProtoRouting, HopLimit: 1})
}
