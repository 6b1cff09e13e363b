package wire

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// templatePacket is the Packet whose AppendPacket encoding DataTemplate
// must write for f.
func templatePacket(encap DataEncap, ts, noCRC bool, f *DataFields) Packet {
	sport, flow := SplitEV(f.EV)
	p := Packet{
		IP:         IPv6{TrafficClass: f.TrafficClass, FlowLabel: flow, HopLimit: 64, Src: f.Src, Dst: f.Dst},
		UDP:        UDP{SrcPort: sport, DstPort: UDPPortRoCEv2},
		BTH:        BTH{Opcode: f.Opcode, PKey: PKeyDefault, DestQP: f.DestQP, AckReq: f.AckReq, Rtx: f.Rtx, TS: ts, PSN: f.PSN},
		METH:       f.METH,
		RETH:       f.RETH,
		Imm:        f.Imm,
		PayloadLen: f.PayloadLen,
		NoCRC:      noCRC,
	}
	if ts {
		p.TSETH = TSETH{TxTimestamp: f.TxTimestamp, FType: TSETHFType}
	}
	switch encap {
	case DataUSID:
		p.IP.Dst, p.FinalDst = f.Via, f.Dst
	case DataEncapsulated:
		p.Encap = true
		p.Outer = IPv6{TrafficClass: f.TrafficClass, FlowLabel: flow, HopLimit: 64, Src: f.Src, Dst: f.Via}
	}
	return p
}

// sackPacket is the Packet whose AppendPacket encoding
// DataTemplate.AppendSACK must write for f and sk.
func sackPacket(encap DataEncap, noCRC bool, f *DataFields, sk *SACK) Packet {
	g := *f
	g.Opcode, g.AckReq, g.Rtx, g.PayloadLen = OpSACK, false, false, 0
	p := templatePacket(encap, false, noCRC, &g)
	p.METH, p.RETH, p.Imm = METH{}, RETH{}, 0
	p.SACK = *sk
	return p
}

// randomFields returns data-packet fields drawn from r, with a payload
// length of n.
func randomFields(r *rand.Rand, n int) DataFields {
	var f DataFields
	for i := range 16 {
		f.Src[i], f.Dst[i], f.Via[i] = byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())
	}
	f.Dst[0] |= 1 // a final destination is never the zero address
	f.TrafficClass, f.EV = uint8(r.Uint32()), EV(r.Uint32())
	f.Opcode = OpWriteFirst + Opcode(r.IntN(int(OpWriteOnlyImm-OpWriteFirst)+1))
	f.AckReq, f.Rtx = r.IntN(2) == 0, r.IntN(2) == 0
	f.DestQP, f.PSN = r.Uint32()&QPNMask, r.Uint32()&PSNMask
	f.METH = METH{RQMSN: uint16(r.Uint32()), MSN: uint16(r.Uint32())}
	f.TxTimestamp = uint16(r.Uint32())
	f.RETH = RETH{VA: r.Uint64(), RKey: r.Uint32(), DMALen: r.Uint32()}
	f.Imm = ImmDt(r.Uint32())
	f.PayloadLen = n
	return f
}

// TestDataTemplate: for every data opcode, encapsulation, TS and NoCRC
// setting and payloads whole (0 to 5,000 bytes) and phantom, with random
// fields, DataTemplate.Append writes what AppendPacket writes for the
// same packet, into a buffer of garbage as into an empty one, and a
// buffer with room costs no allocation.
func TestDataTemplate(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	payload := make([]byte, 5000)
	for i := range payload {
		payload[i] = byte(r.Uint32())
	}
	for _, encap := range []DataEncap{DataPlain, DataUSID, DataEncapsulated} {
		for _, ts := range []bool{false, true} {
			for _, noCRC := range []bool{false, true} {
				tpl := NewDataTemplate(encap, ts, noCRC)
				for _, n := range []int{0, 1, 3, 255, 256, 257, 1000, 4096, 5000} {
					for _, phantom := range []bool{false, true} {
						f := randomFields(r, n)
						pl := payload[:n]
						if phantom {
							pl = nil
						}
						p := templatePacket(encap, ts, noCRC, &f)
						want := AppendPacket(nil, &p, pl)
						dirty := bytes.Repeat([]byte{0xEE}, 9000)
						if got := tpl.Append(dirty[:0], &f, pl); !bytes.Equal(got, want) {
							t.Fatalf("encap %d ts %v noCRC %v %v, %d bytes, phantom %v:\n got %x\nwant %x", encap, ts, noCRC, f.Opcode, n, phantom, got, want)
						}
						if l := tpl.Len(f.Opcode, n); l != p.Len() {
							t.Fatalf("encap %d: Len %d, AppendPacket's packet is %d", encap, l, p.Len())
						}
						if got := tpl.Append([]byte{0xAB}, &f, pl); got[0] != 0xAB || !bytes.Equal(got[1:], want) {
							t.Fatalf("encap %d: after a prefix, the packet differs", encap)
						}
						if a := testing.AllocsPerRun(10, func() { tpl.Append(dirty[:0], &f, pl) }); a != 0 {
							t.Fatalf("%v allocations into a buffer with room", a)
						}
					}
				}
			}
		}
	}
}

// TestDataTemplateSACK: for every encapsulation, TS and NoCRC setting,
// with random fields and SACKs (every bit of the SETH and CC_STATE drawn),
// DataTemplate.AppendSACK writes what AppendPacket writes, into a buffer
// of garbage, and costs no allocation.
func TestDataTemplateSACK(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, encap := range []DataEncap{DataPlain, DataUSID, DataEncapsulated} {
		for _, ts := range []bool{false, true} {
			for _, noCRC := range []bool{false, true} {
				tpl := NewDataTemplate(encap, ts, noCRC)
				for range 50 {
					f := randomFields(r, 0)
					var raw [SACKLen]byte
					for i := range raw {
						raw[i] = byte(r.Uint32())
					}
					var sk SACK
					if _, err := sk.Decode(raw[:]); err != nil {
						t.Fatal(err)
					}
					p := sackPacket(encap, noCRC, &f, &sk)
					want := AppendPacket(nil, &p, nil)
					dirty := bytes.Repeat([]byte{0xEE}, 512)
					if got := tpl.AppendSACK(dirty[:0], &f, &sk); !bytes.Equal(got, want) {
						t.Fatalf("encap %d ts %v noCRC %v:\n got %x\nwant %x", encap, ts, noCRC, got, want)
					}
					if a := testing.AllocsPerRun(10, func() { tpl.AppendSACK(dirty[:0], &f, &sk) }); a != 0 {
						t.Fatalf("%v allocations into a buffer with room", a)
					}
				}
			}
		}
	}
}

// FuzzDataTemplate: DataTemplate.Append and AppendSACK agree with
// AppendPacket for any fields, payload and SACK.
func FuzzDataTemplate(f *testing.F) {
	f.Add(make([]byte, 120), uint8(0), 300)
	f.Add(bytes.Repeat([]byte{0xff}, 120), uint8(7), 5000)
	f.Add(bytes.Repeat([]byte{0x5a}, 130), uint8(64+32+2), 0)
	f.Fuzz(func(t *testing.T, b []byte, mode uint8, n int) {
		if len(b) < 120 || n < 0 || n > 9000 {
			return
		}
		var fl DataFields
		copy(fl.Src[:], b[0:])
		copy(fl.Dst[:], b[16:])
		copy(fl.Via[:], b[32:])
		if fl.Dst == [16]byte{} {
			return // as Packet.FinalDst, zero would mean "none"
		}
		fl.TrafficClass, fl.EV = b[48], EV(binary.BigEndian.Uint32(b[49:]))
		fl.Opcode = OpWriteFirst + Opcode(b[53]%6)
		fl.AckReq, fl.Rtx = b[54]&1 != 0, b[54]&2 != 0
		fl.DestQP, fl.PSN = get24(b[55:]), get24(b[58:])
		fl.METH = METH{RQMSN: binary.BigEndian.Uint16(b[61:]), MSN: binary.BigEndian.Uint16(b[63:])}
		fl.TxTimestamp = binary.BigEndian.Uint16(b[65:])
		fl.RETH = RETH{VA: binary.BigEndian.Uint64(b[67:]), RKey: binary.BigEndian.Uint32(b[75:]), DMALen: binary.BigEndian.Uint32(b[79:])}
		fl.Imm = ImmDt(binary.BigEndian.Uint32(b[83:]))
		fl.PayloadLen = n
		payload := bytes.Repeat(b[87:], n/max(1, len(b)-87)+1)[:n]
		if mode&8 != 0 {
			payload = payload[:n/2] // phantom
		}
		encap, ts, noCRC := DataEncap(mode%3), mode&16 != 0, mode&32 != 0
		tpl := NewDataTemplate(encap, ts, noCRC)
		if mode&64 != 0 && len(b) >= 87+SACKLen {
			var sk SACK
			if _, err := sk.Decode(b[87:]); err != nil {
				t.Fatal(err)
			}
			p := sackPacket(encap, noCRC, &fl, &sk)
			if got, want := tpl.AppendSACK(nil, &fl, &sk), AppendPacket(nil, &p, nil); !bytes.Equal(got, want) {
				t.Fatalf("SACK, encap %d ts %v noCRC %v:\n got %x\nwant %x", encap, ts, noCRC, got, want)
			}
			return
		}
		p := templatePacket(encap, ts, noCRC, &fl)
		if got, want := tpl.Append(nil, &fl, payload), AppendPacket(nil, &p, payload); !bytes.Equal(got, want) {
			t.Fatalf("encap %d ts %v noCRC %v %v, %d bytes:\n got %x\nwant %x", encap, ts, noCRC, fl.Opcode, n, got, want)
		}
	})
}
