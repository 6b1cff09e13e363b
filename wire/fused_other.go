//go:build !amd64

package wire

var fusedCRC = false

func foldSumCRC(dst, src *byte, n int, crc uint32, keys *foldKeys) (le, lo, hi uint64) {
	panic("wire: no fused checksum loop on this platform")
}
