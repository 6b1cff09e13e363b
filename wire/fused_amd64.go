package wire

import "golang.org/x/sys/cpu"

// fusedCRC is whether foldSumCRC may run: it needs AVX-512 and its
// carry-less multiply.
var fusedCRC = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VPCLMULQDQ

// clmulCRC is whether crcFold16 may run: it needs the 128-bit carry-less
// multiply and SSE4.1.
var clmulCRC = cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE41

// foldSumCRC reads n bytes at src (n a positive multiple of foldBlock),
// copying them to dst unless dst is nil. It returns the sum of the bytes
// as little-endian 32-bit words, and crc32.Update(crc, IEEE, the bytes).
// keys are the constants (crcKeys).
//
//go:noescape
func foldSumCRC(dst, src *byte, n int, crc uint32, keys *foldKeys) (le uint64, crcOut uint32)

// crcFold16 returns crc32.Update(crc, IEEE, the n bytes at p), n a
// positive multiple of 16.
//
//go:noescape
func crcFold16(crc uint32, p *byte, n int, keys *foldKeys) uint32
