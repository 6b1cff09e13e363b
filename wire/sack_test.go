package wire

import "testing"

// goldenSACK and its encoding, written out field by field.
var goldenSACK = SACK{
	Type: 0xA, NextHdr: 0x15, M: SackSkipOnce, PR: true, Rtx: true,
	AckPSNOffset: -2, Entropy: 0x12345678, SPDCID: 0x0102, DPDCID: 0x0304,
	CackPSN: 4, CCType: 0x2, CCFlags: 0x5, MPR: 8, SackOffset: 1,
	SackBitmap: 0x76, // bits 0..6 = 0110111: PSN 5 missing, 6 7, 8 missing, 9 10 11
	CC:         CCState{TxTimestamp: 0x1234, Resv: 1, OOOCount: 0x0102, RC: true, RcvCwndPen: 0x7F, RcvdBytes: 0x10},
}

var goldenSACKBytes = []byte{
	0xAA,       // type=0xA (b7-4) | next_hdr[4:1]=0b1010
	0xA3,       // next_hdr[0]=1 (b7) | M=01 SKIP_ONCE (b6-5) | resv=000 | pr=1 (b1) | rtx=1 (b0)
	0xFF, 0xFE, // ack_psn_offset = -2
	0x12, 0x34, 0x56, 0x78, // entropy
	0x01, 0x02, // spdcid
	0x03, 0x04, // dpdcid
	0x00,             // resv
	0x00, 0x00, 0x04, // cack_psn = 4
	0x25,       // cc_type=2 | cc_fl=5
	0x08,       // mpr = 8 (1024 PSNs)
	0x00, 0x01, // sack_offset = +1
	0, 0, 0, 0, 0, 0, 0, 0x76, // sack_bitmap, bit 0 = LSB = PSN 5: 0x76 = 0111 0110, so from b0 up 0 1 1 0 1 1 1: PSN 5 missing, 6 7, 8 missing, 9 10 11
	// CC_STATE
	0x12, 0x34, // tx_timestamp
	0x81, 0x02, // resv=1 (b15) | ooo_count=0x102
	0xFF,             // r_c=1 (b7) | rcv_cwnd_pen=127
	0x00, 0x00, 0x10, // rcvd_bytes = 16 units
}

func TestSACK(t *testing.T) {
	checkCodec(t, goldenSACK, goldenSACKBytes)
	checkCodec(t, SACK{M: SackAlwaysSkip, SackOffset: -32768, CackPSN: 0xFFFFFF, SackBitmap: 1}, []byte{
		0x00,       // type=0 | next_hdr[4:1]=0
		0x40,       // next_hdr[0]=0 | M=10 ALWAYS_SKIP (b6-5) | pr=0
		0x00, 0x00, // ack_psn_offset
		0, 0, 0, 0, // entropy
		0, 0, 0, 0, // spdcid, dpdcid
		0x00,             // resv
		0xFF, 0xFF, 0xFF, // cack_psn
		0x00, 0x00, // cc_type | cc_fl, mpr
		0x80, 0x00, // sack_offset = -32768
		0, 0, 0, 0, 0, 0, 0, 1, // sack_bitmap: only the LSB, bit 0 (base)
		0, 0, 0, 0, 0, 0, 0, 0, // CC_STATE
	})
}

// TestSACKRtxFlag decodes SETH byte 1 from hand-written bytes: b0 is the
// rtx flag (ours: the SACK's trigger was a retransmission), b4-2 stay
// reserved and are kept as they came.
func TestSACKRtxFlag(t *testing.T) {
	for _, c := range []struct {
		b1      byte
		rtx, pr bool
		resv1   uint8
		m       SackMode
	}{
		{b1: 0x01, rtx: true},
		{b1: 0x03, rtx: true, pr: true},
		{b1: 0x1C, resv1: 0x1C},
		{b1: 0x21, rtx: true, m: SackSkipOnce},
	} {
		b := make([]byte, SACKLen)
		b[1] = c.b1
		var s SACK
		if _, err := s.Decode(b); err != nil {
			t.Fatal(err)
		}
		if s.Rtx != c.rtx || s.PR != c.pr || s.Resv1 != c.resv1 || s.M != c.m {
			t.Errorf("byte 1 %#02x: rtx %v pr %v resv1 %#x m %v, want %v %v %#x %v", c.b1, s.Rtx, s.PR, s.Resv1, s.M, c.rtx, c.pr, c.resv1, c.m)
		}
		if got := s.Append(nil); got[1] != c.b1 {
			t.Errorf("byte 1 %#02x encodes back as %#02x", c.b1, got[1])
		}
	}
}

func TestCCState(t *testing.T) {
	checkCodec(t, goldenSACK.CC, goldenSACKBytes[SETHLen:])
}

// TestSACKDigestExample is the example of digest §3.6: PSNs 0-11 sent, 5
// and 8 lost.
func TestSACKDigestExample(t *testing.T) {
	var s SACK
	if _, err := s.Decode(goldenSACKBytes); err != nil {
		t.Fatal(err)
	}
	if s.Base() != 5 {
		t.Errorf("Base = %d; want 5", s.Base())
	}
	if s.AckPSN() != 2 {
		t.Errorf("AckPSN = %d; want 2", s.AckPSN())
	}
	lost := map[uint32]bool{5: true, 8: true}
	for psn := uint32(0); psn <= 11; psn++ {
		if got := s.Acked(psn); got == lost[psn] {
			t.Errorf("Acked(%d) = %v", psn, got)
		}
	}
	if s.Acked(12) || s.Acked(5+64) {
		t.Error("PSNs past the bitmap are acked")
	}
	for i, want := range []bool{false, true, true, false, true, true, true, false} {
		if s.Bit(i) != want {
			t.Errorf("Bit(%d) = %v", i, !want)
		}
	}
	var b SACK
	b.CackPSN, b.SackOffset = 4, 1
	for _, i := range []int{1, 2, 4, 5, 6} {
		b.SetBit(i)
	}
	if b.SackBitmap != s.SackBitmap {
		t.Errorf("SetBit built %#x; want %#x", b.SackBitmap, s.SackBitmap)
	}
}

func TestSACKWrap(t *testing.T) {
	s := SACK{CackPSN: 0xFFFFFE, SackOffset: 1} // base = 0xFFFFFF
	s.SetBit(0)                                 // 0xFFFFFF
	s.SetBit(2)                                 // 0x000001 after the wrap
	s.SetBit(64)                                // ignored
	s.SetBit(-1)                                // ignored
	if s.SackBitmap != 0b101 {
		t.Fatalf("bitmap %#x", s.SackBitmap)
	}
	for psn, want := range map[uint32]bool{
		0xFFFFF0: true, 0xFFFFFE: true, 0xFFFFFF: true, 0: false, 1: true, 2: false,
		0x1000001: true,  // masked to 24 bits: PSN 1
		0x7FFFFD:  false, // 2^23-1 after CackPSN: ahead
		0x7FFFFF:  true,  // 2^23-1 before CackPSN: behind
	} {
		if got := s.Acked(psn); got != want {
			t.Errorf("Acked(%#x) = %v", psn, got)
		}
	}
	if s.Bit(64) || s.Bit(-1) {
		t.Error("Bit out of range is set")
	}
	neg := SACK{CackPSN: 1, SackOffset: -3, AckPSNOffset: -2}
	if neg.Base() != 0xFFFFFE || neg.AckPSN() != 0xFFFFFF {
		t.Errorf("negative offsets: Base %#x AckPSN %#x", neg.Base(), neg.AckPSN())
	}
}

func TestSackModeString(t *testing.T) {
	for m, want := range map[SackMode]string{
		SackNone: "NONE", SackSkipOnce: "SKIP_ONCE", SackAlwaysSkip: "ALWAYS_SKIP", 3: "SackMode(3)",
	} {
		if m.String() != want {
			t.Errorf("%d.String() = %q", m, m.String())
		}
	}
}

func FuzzSACK(f *testing.F)    { fuzzCodec(f, goldenSACK, SACK{M: SackAlwaysSkip, SackOffset: -1}) }
func FuzzCCState(f *testing.F) { fuzzCodec(f, goldenSACK.CC) }

func BenchmarkSACKDecode(b *testing.B) {
	var s SACK
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.Decode(goldenSACKBytes)
	}
	reportPerPacket(b, 0)
}

func BenchmarkSACKAppend(b *testing.B) {
	buf := make([]byte, 0, SACKLen)
	b.ReportAllocs()
	for b.Loop() {
		buf = goldenSACK.Append(buf[:0])
	}
	reportPerPacket(b, 0)
}

// TestSACKBitmapBitOrder decodes a SETH written out by hand, not by our
// encoder, and lists the PSNs it acknowledges: the bitmap's least
// significant bit (b0 of byte 27) is bit 0, PSN cack_psn + sack_offset,
// and bit i is PSN cack_psn + sack_offset + i (digest §3.2: bit 0 = LSB).
func TestSACKBitmapBitOrder(t *testing.T) {
	b := []byte{
		0x00, 0x00, // type, next_hdr, M=NONE, pr=0
		0x00, 0x00, // ack_psn_offset
		0, 0, 0, 0, // entropy
		0, 0, 0, 0, // spdcid, dpdcid
		0x00,             // resv
		0x00, 0x00, 0x64, // cack_psn = 100
		0x00, 0x08, // cc_type | cc_fl, mpr
		0x00, 0x02, // sack_offset = +2: bit 0 is PSN 102
		// sack_bitmap: byte 20 b7 is bit 63, byte 27 b0 is bit 0.
		0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x05, // bits 63, 8, 2, 0
		0, 0, 0, 0, 0, 0, 0, 0, // CC_STATE
	}
	var s SACK
	if _, err := s.Decode(b); err != nil {
		t.Fatal(err)
	}
	var acked []uint32
	for psn := uint32(90); psn < 200; psn++ {
		if s.Acked(psn) {
			acked = append(acked, psn)
		}
	}
	var want []uint32
	for psn := uint32(90); psn <= 100; psn++ {
		want = append(want, psn) // cumulatively
	}
	want = append(want, 102, 104, 110, 165) // bits 0, 2, 8, 63
	if len(acked) != len(want) {
		t.Fatalf("acknowledged PSNs %v, want %v", acked, want)
	}
	for i := range want {
		if acked[i] != want[i] {
			t.Fatalf("acknowledged PSNs %v, want %v", acked, want)
		}
	}
	for i, want := range map[int]bool{0: true, 1: false, 2: true, 8: true, 62: false, 63: true} {
		if s.Bit(i) != want {
			t.Errorf("Bit(%d) = %v", i, !want)
		}
	}
}
