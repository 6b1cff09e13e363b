//go:build !amd64

package wire

var fusedCRC, clmulCRC = false, false

func foldSumCRC(dst, src *byte, n int, crc uint32, keys *foldKeys) (le uint64, crcOut uint32) {
	panic("wire: no fused checksum loop on this platform")
}

func crcFold16(crc uint32, p *byte, n int, keys *foldKeys) uint32 {
	panic("wire: no carry-less multiply on this platform")
}
