package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

var dataKinds = []kind{{OpWriteFirst, false}, {OpWriteMiddle, true}, {OpWriteLastImm, false}, {OpWriteOnlyImm, true}}

// checkTrimmed checks that trimmed is orig cut to its headers with DSCP
// dscp and a checksum that verifies against final.
func checkTrimmed(t *testing.T, orig *Packet, trimmed []byte, dscp uint8, final [16]byte) {
	t.Helper()
	var q Packet
	if err := q.Decode(trimmed); err != nil {
		t.Fatalf("Decode of the trimmed packet: %v", err)
	}
	if !q.Trimmed || q.PayloadLen != 0 || q.HasICRC || len(q.Payload) != 0 {
		t.Errorf("Trimmed %v PayloadLen %d HasICRC %v", q.Trimmed, q.PayloadLen, q.HasICRC)
	}
	if want := orig.Len() - orig.PayloadLen - pad(orig.PayloadLen) - ICRCLen; len(trimmed) != want {
		t.Errorf("trimmed to %d bytes; want %d", len(trimmed), want)
	}
	want := wireFields(*orig)
	want.Trimmed = true
	want.PayloadLen = 0
	want.BTH.PadCnt = uint8(pad(orig.PayloadLen)) // the BTH is left alone
	want.IP.SetDSCP(dscp)
	if want.Encap {
		want.Outer.SetDSCP(dscp)
	}
	if got := wireFields(q); !reflect.DeepEqual(got, want) {
		t.Errorf("trimmed headers:\n got %+v\nwant %+v", got, want)
	}
	q.FinalDst = final
	if err := q.Verify(trimmed); err != nil {
		t.Errorf("Verify of the trimmed packet: %v", err)
	}
}

func TestTrim(t *testing.T) {
	for _, e := range encapsulations {
		for _, k := range dataKinds {
			t.Run(fmt.Sprint(e, "/", k), func(t *testing.T) {
				p, payload := testPacket(k, e)
				pkt := AppendPacket(nil, &p, payload)
				trimmed, err := Trim(pkt, 8)
				if err != nil {
					t.Fatal(err)
				}
				if &trimmed[0] != &pkt[0] {
					t.Error("Trim did not work in place")
				}
				checkTrimmed(t, &p, trimmed, 8, testNIC)
				if OuterECN(trimmed) != ECT0 {
					t.Errorf("ECN %v", OuterECN(trimmed))
				}

				// Phantom payloads are trimmed to the same bytes (the
				// checksum computed afresh), except for an inline-uSID
				// container, whose final address Trim cannot know.
				phantom := AppendPacket(nil, &p, nil)
				ptrimmed, err := Trim(phantom, 8)
				if err != nil {
					t.Fatal(err)
				}
				if e != inlineUSID && !bytes.Equal(ptrimmed, trimmed) {
					t.Errorf("trimmed phantom differs:\n got %x\nwant %x", ptrimmed, trimmed)
				}

				again := slices.Clone(trimmed)
				if out, err := Trim(again, 3); err != nil || len(out) != len(trimmed) {
					t.Errorf("Trim of a trimmed packet: %d bytes, %v", len(out), err)
				}
				SetOuterDSCP(again, 8)
				if e == encapUSID || e == encapSRH {
					SetOuterDSCP(again[len(again)-UDPLen-k.op.HeaderLen(k.ts)-IPv6Len:], 8)
				}
				if !bytes.Equal(again, trimmed) {
					t.Error("Trim of a trimmed packet changed more than the DSCP")
				}

				buf := slices.Clone(pkt)
				if n := testing.AllocsPerRun(50, func() {
					copy(buf, AppendPacket(buf[:0], &p, payload))
					_, _ = Trim(buf, 8)
				}); n != 0 {
					t.Errorf("Trim: %v allocs", n)
				}
			})
		}
	}
}

// TestTrimInlineUSIDPhantom: a simulator trimming a phantom inline-uSID
// packet mid-path fixes the checksum with ResolveUSID and AppendPacket.
func TestTrimInlineUSIDPhantom(t *testing.T) {
	p, _ := testPacket(kind{OpWriteOnly, false}, inlineUSID)
	pkt := AppendPacket(nil, &p, nil)
	F3216.Shift(OuterDst(pkt)) // one hop along
	pkt, err := Trim(pkt, 8)
	if err != nil {
		t.Fatal(err)
	}
	var q Packet
	if err := q.Decode(pkt); err != nil {
		t.Fatal(err)
	}
	q.ResolveUSID(F3216)
	fixed := AppendPacket(nil, &q, nil)
	for F3216.Shift(OuterDst(fixed)) {
	}
	if err := q.Decode(fixed); err != nil || q.Verify(fixed) != nil {
		t.Errorf("at the NIC: %v, Verify %v", err, q.Verify(fixed))
	}
}

// TestTrimMidPath trims a full inline-uSID packet mid-path: the checksum
// is updated incrementally, so it verifies at the NIC.
func TestTrimMidPath(t *testing.T) {
	p, payload := testPacket(kind{OpWriteLast, true}, inlineUSID)
	pkt := AppendPacket(nil, &p, payload)
	F3216.Shift(OuterDst(pkt))
	pkt, err := Trim(pkt, 5)
	if err != nil {
		t.Fatal(err)
	}
	for F3216.Shift(OuterDst(pkt)) {
	}
	var q Packet
	if err := q.Decode(pkt); err != nil || !q.Trimmed || q.Verify(pkt) != nil {
		t.Errorf("at the NIC: %v, Trimmed %v, Verify %v", err, q.Trimmed, q.Verify(pkt))
	}
}

// TestTrimKeepsCorruption: a packet that was corrupt before trimming is
// still detectably corrupt after, wherever the damage was.
func TestTrimKeepsCorruption(t *testing.T) {
	p, payload := testPacket(kind{OpWriteOnly, false}, encapUSID)
	good := AppendPacket(nil, &p, payload)
	hdrEnd := len(good) - len(payload) - 3 - ICRCLen
	for _, at := range []int{hdrEnd - 1, hdrEnd, hdrEnd + 500, len(good) - 1} {
		pkt := slices.Clone(good)
		pkt[at] ^= 0x08
		pkt, err := Trim(pkt, 8)
		if err != nil {
			t.Fatal(err)
		}
		var q Packet
		if err := q.Decode(pkt); err != nil || q.Verify(pkt) != ErrChecksum {
			t.Errorf("damage at %d: Verify after Trim = %v", at, q.Verify(pkt))
		}
	}
}

func TestTrimErrors(t *testing.T) {
	p, _ := testPacket(kind{OpSACK, false}, plain)
	sack := AppendPacket(nil, &p, nil)
	orig := slices.Clone(sack)
	if out, err := Trim(sack, 8); err != ErrUnsupported || !bytes.Equal(out, orig) || !bytes.Equal(sack, orig) {
		t.Errorf("Trim of a SACK = %v; changed %v", err, !bytes.Equal(sack, orig))
	}
	junk := []byte{0x60, 0, 0, 0, 0, 8}
	if _, err := Trim(junk, 8); err != ErrTruncated {
		t.Errorf("Trim of junk = %v", err)
	}
}

func TestDecapsulate(t *testing.T) {
	for _, tc := range []struct {
		outer, inner, want ECN
		err                error
	}{
		{CE, ECT0, CE, nil},
		{ECT1, ECT0, ECT1, nil},
		{ECT0, ECT1, ECT1, nil},
		{NotECT, ECT0, ECT0, nil},
		{CE, NotECT, 0, ErrECNDrop},
	} {
		p, payload := testPacket(kind{OpWriteOnly, false}, encapSRH)
		p.Outer.SetECN(tc.outer)
		p.IP.SetECN(tc.inner)
		pkt := AppendPacket(nil, &p, payload)
		inner, err := Decapsulate(pkt)
		if err != tc.err {
			t.Errorf("%v over %v: %v", tc.outer, tc.inner, err)
			continue
		}
		if err != nil {
			if len(inner) != len(pkt) || OuterECN(pkt) != tc.outer {
				t.Errorf("%v over %v: packet changed on error", tc.outer, tc.inner)
			}
			continue
		}
		if OuterECN(inner) != tc.want || len(inner) != len(pkt)-IPv6Len-p.SRH.Len() || OuterTrafficClass(inner)>>2 != 4 {
			t.Errorf("%v over %v: inner ECN %v, %d bytes", tc.outer, tc.inner, OuterECN(inner), len(inner))
		}
		var q Packet
		if err := q.Decode(inner); err != nil || q.Encap || q.Verify(inner) != nil {
			t.Errorf("inner packet: %v, %v", err, q.Verify(inner))
		}
		if n := testing.AllocsPerRun(50, func() { _, _ = Decapsulate(pkt) }); n != 0 {
			t.Errorf("%v allocs", n)
		}
	}
	p, payload := testPacket(kind{OpWriteOnly, false}, plain)
	pkt := AppendPacket(nil, &p, payload)
	if out, err := Decapsulate(pkt); err != nil || len(out) != len(pkt) {
		t.Errorf("plain packet: %d bytes, %v", len(out), err)
	}
	p, _ = testPacket(kind{OpWriteOnly, false}, encapUSID)
	pkt = AppendPacket(nil, &p, nil) // phantom
	if out, err := Decapsulate(pkt); err != nil || len(out) != len(pkt)-IPv6Len {
		t.Errorf("phantom: %d bytes, %v", len(out), err)
	}
}

// FuzzTrim: Trim never panics and only changes a packet it accepts, and
// keeps its transport headers; trimming a valid encoding (whole or
// phantom) of whatever decodes gives a packet that verifies.
func FuzzTrim(f *testing.F) {
	for _, e := range encapsulations {
		for _, k := range dataKinds {
			p, payload := testPacket(k, e)
			f.Add(AppendPacket(nil, &p, payload[:7]), uint8(8))
			f.Add(AppendPacket(nil, &p, nil), uint8(0x3F))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, dscp uint8) {
		pkt := slices.Clone(b)
		out, err := Trim(pkt, dscp)
		if err != nil {
			if !isSentinel(err) || !bytes.Equal(pkt, b) || len(out) != len(b) {
				t.Fatalf("Trim = %v, packet changed", err)
			}
			return
		}
		var q Packet
		if err := q.Decode(out); err != nil || !q.Trimmed || !q.BTH.Opcode.IsData() {
			t.Fatalf("trimmed packet: %v, Trimmed %v", err, q.Trimmed)
		}
		if OuterTrafficClass(out)>>2 != dscp&0x3F {
			t.Fatalf("DSCP %d; want %d", OuterTrafficClass(out)>>2, dscp&0x3F)
		}

		var p Packet
		if p.Decode(b) != nil {
			t.Fatal("Trim accepted a packet Decode rejects")
		}
		if p.BTH != q.BTH || p.RETH != q.RETH || p.METH != q.METH || p.Imm != q.Imm || p.TSETH != q.TSETH {
			t.Fatal("Trim changed a transport header")
		}
		p.FinalDst = p.Final()
		valid := AppendPacket(nil, &p, p.Payload)
		out, err = Trim(valid, dscp)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Decode(out); err != nil {
			t.Fatal(err)
		}
		q.FinalDst = p.FinalDst
		if err := q.Verify(out); err != nil {
			t.Fatalf("Trim of a valid packet: Verify = %v", err)
		}
	})
}

func BenchmarkTrim(b *testing.B) {
	p, payload := benchPacket(b, OpWriteMiddle)
	orig := AppendPacket(nil, &p, payload)
	pkt := slices.Clone(orig)
	b.ReportAllocs()
	for b.Loop() {
		copy(pkt, orig)
		if _, err := Trim(pkt[:len(orig)], 8); err != nil {
			b.Fatal(err)
		}
	}
	reportPerPacket(b, 0)
}

func BenchmarkTrimPhantom(b *testing.B) {
	p, _ := benchPacket(b, OpWriteMiddle)
	orig := AppendPacket(nil, &p, nil)
	pkt := slices.Clone(orig)
	b.ReportAllocs()
	for b.Loop() {
		copy(pkt, orig)
		if _, err := Trim(pkt, 8); err != nil {
			b.Fatal(err)
		}
	}
	reportPerPacket(b, 0)
}
