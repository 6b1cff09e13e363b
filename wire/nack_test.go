package wire

import "testing"

var goldenNACK = NACK{
	Type: 0x3, NextHdr: 0x04, Reason: NackTrimmed, VendorInfo: 0x77, Entropy: 0xCAFEF00D,
	SPDCID: 0x1111, DPDCID: 0x2222, NackPSN: 0x123456, CCType: NACKDefaultCCType, CCFlags: 1,
	TxTimestamp: 0xABCD,
}

func TestNACK(t *testing.T) {
	checkCodec(t, goldenNACK, []byte{
		0x32,                   // type=3 (b7-4) | next_hdr[4:1]=0b0010
		0x00,                   // next_hdr[0]=0 | resv
		0x01,                   // nack_reason TRIMMED
		0x77,                   // vendor_info
		0xCA, 0xFE, 0xF0, 0x0D, // entropy
		0x11, 0x11, // spdcid
		0x22, 0x22, // dpdcid
		0x00,             // resv
		0x12, 0x34, 0x56, // nack_psn
		0x21,       // cc_type=2 (default) | cc_fl=1
		0x00,       // resv
		0xAB, 0xCD, // tx_timestamp
	})
	checkCodec(t, NACK{NextHdr: 1, Resv1: 0x5F, Reason: NackWImmLimit, Resv12: 0xEE, Resv17: 0xDD}, []byte{
		0x00,       // type=0 | next_hdr[4:1]=0
		0xDF,       // next_hdr[0]=1 (b7) | resv b6 = 1 | ce b5 = 0 | resv b4-0 = 11111
		0x0C,       // nack_reason WIMM_LIMIT (our choice)
		0x00,       // vendor_info
		0, 0, 0, 0, // entropy
		0, 0, 0, 0, // spdcid, dpdcid
		0xEE,    // resv
		0, 0, 0, // nack_psn
		0x00, // cc_type | cc_fl
		0xDD, // resv
		0, 0, // tx_timestamp
	})
}

// TestNACKCE decodes a hand-written NETH whose byte 1 has only b5 set:
// the NACKed packet arrived CE-marked (our choice of bit, docs/wire.md).
func TestNACKCE(t *testing.T) {
	b := make([]byte, NETHLen)
	b[1], b[2] = 0x20, byte(NackTrimmedLastHop)
	var n NACK
	if _, err := n.Decode(b); err != nil || !n.CE || n.Resv1 != 0 || n.Reason != NackTrimmedLastHop {
		t.Fatalf("decoded %+v, %v; want CE and no reserved bits", n, err)
	}
	checkCodec(t, NACK{CE: true, Reason: NackTrimmedLastHop}, b)
}

func TestNackReasonString(t *testing.T) {
	for r, want := range map[NackReason]string{
		0x01: "TRIMMED", 0x02: "TRIMMED_LASTHOP", 0x06: "NO_BITMAP", 0x07: "NO_PKT_BUFFER",
		0x0A: "NO_RESOURCE", 0x0B: "PSN_OOR_WINDOW", 0x0C: "WIMM_LIMIT", 0x19: "UNEXP_EVENT",
		0x03: "NackReason(0x03)",
	} {
		if r.String() != want {
			t.Errorf("%#x.String() = %q; want %q", uint8(r), r.String(), want)
		}
	}
}

func FuzzNACK(f *testing.F) { fuzzCodec(f, goldenNACK) }
