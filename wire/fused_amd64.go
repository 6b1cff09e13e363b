package wire

import "golang.org/x/sys/cpu"

// fusedCRC is whether foldSumCRC may run: it needs AVX-512 and its
// carry-less multiply.
var fusedCRC = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VPCLMULQDQ

// foldSumCRC reads n bytes at src (n a positive multiple of foldBlock),
// copying them to dst unless dst is nil. It returns the sum of the
// bytes as little-endian 32-bit words, and the CRC-32 state after them,
// starting from crc, folded into a 128-bit value (lo, hi): a 16-byte
// message with the same CRC from a zero register (sumCRC finishes it).
// keys are the folding constants (crcKeys).
//
//go:noescape
func foldSumCRC(dst, src *byte, n int, crc uint32, keys *foldKeys) (le, lo, hi uint64)
