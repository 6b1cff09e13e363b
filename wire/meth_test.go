package wire

import "testing"

func TestMETH(t *testing.T) {
	checkCodec(t, METH{RQMSN: 0x0102, MSN: 0xFFFE}, []byte{
		0x01, 0x02, // RQMSN
		0xFF, 0xFE, // MSN
	})
}

func FuzzMETH(f *testing.F) { fuzzCodec(f, METH{RQMSN: 1, MSN: 2}) }
