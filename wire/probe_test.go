package wire

import "testing"

var goldenProbe = Probe{
	Type: 1, NextHdr: 0x1F, Resv1: 0x05, VendorInfo: 0x09, ProbeID: 0x0A0B,
	SPDCID: 0x0C0D, DPDCID: 0x0E0F, TS: TSETH{TxTimestamp: 0x1357, FType: TSETHFType},
}

func TestProbe(t *testing.T) {
	checkCodec(t, goldenProbe, []byte{
		0x1F,       // type=1 (b7-4) | next_hdr[4:1]=0b1111
		0x85,       // next_hdr[0]=1 (b7) | resv=0x05
		0x00,       // resv
		0x09,       // vendor_info
		0x0A, 0x0B, // probe_id
		0x00, 0x00, // resv
		0x0C, 0x0D, // spdcid
		0x0E, 0x0F, // dpdcid
		0x13, 0x57, // tx_timestamp
		0x00, 0x01, // tsr=0 | resv | ftype=1
	})
	checkCodec(t, Probe{Resv2: 0xA5, Resv6: 0xBEEF, TS: TSETH{TSR: true, Resv: 0x7FF}}, []byte{
		0x00, 0x00, // type, next_hdr, resv
		0xA5,       // resv
		0x00,       // vendor_info
		0x00, 0x00, // probe_id
		0xBE, 0xEF, // resv
		0, 0, 0, 0, // spdcid, dpdcid
		0x00, 0x00, // tx_timestamp
		0xFF, 0xF0, // tsr=1 | resv=0x7FF | ftype=0
	})
}

func FuzzProbe(f *testing.F) { fuzzCodec(f, goldenProbe) }
