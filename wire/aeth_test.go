package wire

import "testing"

func TestAETH(t *testing.T) {
	checkCodec(t, AETH{Syndrome: AETHAck, MSN: 0xABCD}, []byte{
		0x1F,             // syndrome: ACK, credit field 0b11111
		0x00, 0xAB, 0xCD, // MSN
	})
	checkCodec(t, AETH{Syndrome: AETHNakPSNSeqError, MSN: 0xFFFFFF}, []byte{
		0x60,             // syndrome: NAK, PSN sequence error
		0xFF, 0xFF, 0xFF, // MSN
	})
}

func FuzzAETH(f *testing.F) { fuzzCodec(f, AETH{Syndrome: AETHAck, MSN: 3}) }
