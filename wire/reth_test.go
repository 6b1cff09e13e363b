package wire

import "testing"

func TestRETH(t *testing.T) {
	checkCodec(t, RETH{VA: 0x0011223344556677, RKey: 0x8899AABB, DMALen: 0x00010000}, []byte{
		0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, // VA
		0x88, 0x99, 0xAA, 0xBB, // R_Key
		0x00, 0x01, 0x00, 0x00, // DMA length 65536
	})
}

func TestImmDt(t *testing.T) {
	checkCodec(t, ImmDt(0xDEADBEEF), []byte{0xDE, 0xAD, 0xBE, 0xEF}) // immediate data
}

func FuzzRETH(f *testing.F)  { fuzzCodec(f, RETH{VA: 1 << 40, RKey: 5, DMALen: 4096}) }
func FuzzImmDt(f *testing.F) { fuzzCodec(f, ImmDt(42)) }
