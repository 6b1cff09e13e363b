package wire

import "testing"

// checkLocate fails t unless Locate agrees with Decode on b, which Decode
// accepted into p: the same inner IPv6, SRH, UDP and BTH offsets, EV,
// opcode and destination QP.
func checkLocate(t *testing.T, b []byte, p *Packet) {
	t.Helper()
	h, ok := Locate(b)
	if !ok {
		t.Fatalf("Decode accepts what Locate does not find:\n%x", b)
	}
	ip := 0
	if p.Encap {
		ip = p.udpOffset() - IPv6Len
	}
	srh := -1
	if p.HasSRH {
		srh = IPv6Len
	}
	if h.IP != ip || h.SRH != srh || h.UDP != p.udpOffset() || h.BTH != h.UDP+UDPLen {
		t.Fatalf("Locate %+v; Decode: inner IPv6 at %d, SRH at %d, UDP at %d", h, ip, srh, p.udpOffset())
	}
	op, okOp := h.Opcode(b)
	qpn, okQP := h.DestQP(b)
	if h.EV(b) != p.EV() || op != p.BTH.Opcode || qpn != p.BTH.DestQP || !okOp || !okQP {
		t.Fatalf("Locate reads EV %v opcode %v QP %#x; Decode %v %v %#x", h.EV(b), op, qpn, p.EV(), p.BTH.Opcode, p.BTH.DestQP)
	}
}

func TestLocate(t *testing.T) {
	for _, e := range encapsulations {
		for _, k := range kinds {
			p, payload := testPacket(k, e)
			b := AppendPacket(nil, &p, payload)
			var d Packet
			if err := d.Decode(b); err != nil {
				t.Fatalf("%v %v: %v", e, k, err)
			}
			checkLocate(t, b, &d)
			for _, n := range []int{d.udpOffset() + UDPLen, d.udpOffset() + UDPLen + BTHLen - 1} {
				if h, ok := Locate(b[:n]); !ok || h.BTH != -1 {
					t.Errorf("%v %v cut to %d bytes: Locate %+v, %v; want the UDP header and no BTH", e, k, n, h, ok)
				}
			}
			if _, ok := Locate(b[:d.udpOffset()+UDPLen-1]); ok {
				t.Errorf("%v %v: located a cut UDP header", e, k)
			}
		}
	}
	// Not UDP, too deep, too short.
	p, _ := testPacket(kind{OpAck, false}, plain)
	b := AppendPacket(nil, &p, nil)
	b[6] = 59 // no next header
	if _, ok := Locate(b); ok {
		t.Error("located UDP after IPv6 No Next Header")
	}
	deep := make([]byte, 5*IPv6Len+UDPLen+BTHLen)
	for i := range 5 {
		deep[i*IPv6Len+6] = ProtoIPv6
	}
	deep[4*IPv6Len+6] = ProtoUDP
	if _, ok := Locate(deep); ok {
		t.Error("followed a chain deeper than four headers")
	}
	if _, ok := Locate(b[:IPv6Len-1]); ok {
		t.Error("located a cut IPv6 header")
	}
}

func TestLocateAllocs(t *testing.T) {
	p, payload := testPacket(kind{OpWriteOnlyImm, true}, encapSRH)
	b := AppendPacket(nil, &p, payload)
	var sink uint32
	n := testing.AllocsPerRun(100, func() {
		h, _ := Locate(b)
		qpn, _ := h.DestQP(b)
		sink += uint32(h.EV(b)) + qpn
	})
	if n != 0 {
		t.Errorf("Locate allocates %v times per packet", n)
	}
	_ = sink
}

// FuzzLocate checks that Locate never panics nor points outside b, and
// agrees with Decode on every datagram Decode accepts.
func FuzzLocate(f *testing.F) {
	for _, e := range encapsulations {
		for _, k := range kinds {
			p, payload := testPacket(k, e)
			if len(payload) > 0 {
				payload, p.PayloadLen = payload[:5], 5
			}
			f.Add(AppendPacket(nil, &p, payload))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := Locate(b)
		if ok {
			if h.UDP+UDPLen > len(b) || h.IP+IPv6Len > len(b) || h.SRH >= len(b) || h.BTH >= 0 && h.BTH+BTHLen > len(b) {
				t.Fatalf("Locate %+v outside %d bytes", h, len(b))
			}
			_ = h.EV(b)
		}
		var p Packet
		if p.Decode(b) == nil {
			checkLocate(t, b, &p)
		}
	})
}

// TestExts checks the extension header table: the headers of every opcode
// sit back to back in the order METH, TSETH, RETH, ImmDt (or the opcode's
// one header), and an unknown opcode has none.
func TestExts(t *testing.T) {
	for _, k := range kinds {
		x := k.op.Exts(k.ts)
		var at int8
		for _, h := range []struct{ off, n int8 }{{x.METH, METHLen}, {x.TSETH, TSETHLen}, {x.RETH, RETHLen}, {x.ImmDt, ImmDtLen},
			{x.AETH, AETHLen}, {x.SACK, SACKLen}, {x.NACK, NETHLen}, {x.Probe, PETHLen}, {x.EPReq, ERTHLen}, {x.EPResp, EETHLen}} {
			if h.off < 0 {
				continue
			}
			if h.off != at {
				t.Fatalf("%v: a header at %d, want %d (%+v)", k, h.off, at, x)
			}
			at += h.n
		}
		if at != x.Len || at == 0 || (x.TSETH >= 0) != (k.ts && k.op.IsData()) || (x.ImmDt >= 0) != k.op.HasImm() {
			t.Fatalf("%v: %+v", k, x)
		}
	}
	if x := Opcode(0x55).Exts(true); x != noExts {
		t.Fatalf("unknown opcode: %+v", x)
	}
}
