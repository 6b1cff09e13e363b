package wire

import "testing"

func TestTSETH(t *testing.T) {
	checkCodec(t, TSETH{TxTimestamp: 0xBEEF, TSR: true, Resv: 0x5A5, FType: TSETHFType}, []byte{
		0xBE, 0xEF, // tx_timestamp
		0xDA, 0x51, // tsr=1 (b15) | resv=0x5A5 (b14-4) | ftype=1 (b3-0)
	})
	checkCodec(t, TSETH{TxTimestamp: 1, FType: 0xF}, []byte{
		0x00, 0x01, // tx_timestamp
		0x00, 0x0F, // tsr=0 | resv=0 | ftype=0xF
	})
}

func FuzzTSETH(f *testing.F) { fuzzCodec(f, TSETH{TxTimestamp: 77, FType: TSETHFType}) }
