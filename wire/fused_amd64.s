#include "textflag.h"

// func foldSumCRC(dst, src *byte, n int, crc uint32, keys *foldKeys) (le uint64, crcOut uint32)
//
// Registers: Z0-Z3 the CRC lanes of the 256 bytes in flight, Z4-Z7 the
// next 256 bytes, Z8 the initial CRC, Z9 the low-dword mask, Z10 the
// folding keys, Z11-Z12 scratch, Z13-Z14 the sums of the high and low
// 32-bit words of every 64-bit word.

// PREFETCH4 asks for the four cache lines at off(SI) and off(DI) (the
// copy's source and destination, one of which is a memory region the
// bytes rarely stay cached in) before the loop reaches them: a packet is
// one page, where the hardware's prefetch starts over.
#define PREFETCH4(off) \
	PREFETCHT0 off(SI) \
	PREFETCHT0 off(DI) \
	PREFETCHT0 off+64(SI) \
	PREFETCHT0 off+64(DI) \
	PREFETCHT0 off+128(SI) \
	PREFETCHT0 off+128(DI) \
	PREFETCHT0 off+192(SI) \
	PREFETCHT0 off+192(DI)

// prefetchAhead is how far ahead of the copy loop PREFETCH4 runs, in
// bytes: measured best among 512, 1,024, 2,048 and 4,096 for 4 KiB
// payloads (docs/udpio.md).
#define prefetchAhead 2048

// SUM adds the two 32-bit halves of each 64-bit word of z to Z13, Z14.
#define SUM(z) \
	VPSRLQ $32, z, Z11 \
	VPANDQ Z9, z, Z12 \
	VPADDQ Z11, Z13, Z13 \
	VPADDQ Z12, Z14, Z14

// FOLD folds the lanes of acc over 256 bytes onto data, into acc.
#define FOLD(acc, data) \
	VPCLMULQDQ $0x00, Z10, acc, Z11 \
	VPCLMULQDQ $0x11, Z10, acc, acc \
	VPTERNLOGD $0x96, Z11, data, acc

// FOLDINTO folds the lanes of from (with the keys in Z10) into to.
#define FOLDINTO(from, to) \
	VPCLMULQDQ $0x00, Z10, from, Z11 \
	VPCLMULQDQ $0x11, Z10, from, Z12 \
	VPTERNLOGD $0x96, Z11, Z12, to

// FINISH reduces the 128-bit CRC state in x (a 16-byte message from a
// zero register) to the 32-bit CRC, inverted as crc32.Update returns it,
// in AX: fold 128 bits to 96 (k16's second key), 96 to 64 (r5), then
// Barrett's reduction (polyMu). DX points to the keys; it uses X1-X3.
#define FINISH(x) \
	MOVOU x, X2 \
	MOVOU 128(DX), X1 \
	PCLMULQDQ $0x10, X1, x \
	PSRLDQ $8, X2 \
	PXOR X2, x \
	PCMPEQL X3, X3 \
	PSRLQ $32, X3 \
	MOVOU x, X2 \
	PAND X3, x \
	PSRLDQ $4, X2 \
	MOVOU 144(DX), X1 \
	PCLMULQDQ $0x00, X1, x \
	PXOR X2, x \
	MOVOU x, X2 \
	PAND X3, x \
	MOVOU 160(DX), X1 \
	PCLMULQDQ $0x10, X1, x \
	PAND X3, x \
	PCLMULQDQ $0x00, X1, x \
	PXOR X2, x \
	PEXTRD $1, x, AX \
	NOTL AX

TEXT ·foldSumCRC(SB), NOSPLIT, $0-52
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL crc+24(FP), AX
	MOVQ keys+32(FP), DX

	NOTL AX
	VMOVD AX, X8
	VPTERNLOGD $0xff, Z9, Z9, Z9
	VPSRLQ $32, Z9, Z9
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VBROADCASTI32X4 0(DX), Z10

	TESTQ DI, DI
	JZ noprefetch
	PREFETCH4(0)
	PREFETCH4(256)
	PREFETCH4(512)
	PREFETCH4(768)
	PREFETCH4(1024)
	PREFETCH4(1280)
	PREFETCH4(1536)
	PREFETCH4(1792)

noprefetch:
	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	SUM(Z0)
	SUM(Z1)
	SUM(Z2)
	SUM(Z3)
	TESTQ DI, DI
	JZ first
	VMOVDQU64 Z0, 0(DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	ADDQ $256, DI

first:
	VPXORQ Z8, Z0, Z0
	ADDQ $256, SI
	SUBQ $256, CX
	JZ combine
	TESTQ DI, DI
	JNZ copyloop

loop:
	VMOVDQU64 0(SI), Z4
	VMOVDQU64 64(SI), Z5
	VMOVDQU64 128(SI), Z6
	VMOVDQU64 192(SI), Z7
	SUM(Z4)
	SUM(Z5)
	SUM(Z6)
	SUM(Z7)
	FOLD(Z0, Z4)
	FOLD(Z1, Z5)
	FOLD(Z2, Z6)
	FOLD(Z3, Z7)
	ADDQ $256, SI
	SUBQ $256, CX
	JNZ loop
	JMP combine

copyloop:
	PREFETCH4(prefetchAhead)
	VMOVDQU64 0(SI), Z4
	VMOVDQU64 64(SI), Z5
	VMOVDQU64 128(SI), Z6
	VMOVDQU64 192(SI), Z7
	VMOVDQU64 Z4, 0(DI)
	VMOVDQU64 Z5, 64(DI)
	VMOVDQU64 Z6, 128(DI)
	VMOVDQU64 Z7, 192(DI)
	SUM(Z4)
	SUM(Z5)
	SUM(Z6)
	SUM(Z7)
	FOLD(Z0, Z4)
	FOLD(Z1, Z5)
	FOLD(Z2, Z6)
	FOLD(Z3, Z7)
	ADDQ $256, SI
	ADDQ $256, DI
	SUBQ $256, CX
	JNZ copyloop

combine:
	// The four registers onto the last one, then its four lanes onto
	// its last lane.
	VBROADCASTI32X4 16(DX), Z10
	FOLDINTO(Z0, Z3)
	VBROADCASTI32X4 32(DX), Z10
	FOLDINTO(Z1, Z3)
	VBROADCASTI32X4 48(DX), Z10
	FOLDINTO(Z2, Z3)
	VMOVDQU64 64(DX), Z10
	VPCLMULQDQ $0x00, Z10, Z3, Z11
	VPCLMULQDQ $0x11, Z10, Z3, Z12
	VPXORQ Z11, Z12, Z11
	VEXTRACTI32X4 $3, Z3, X12
	VEXTRACTI64X4 $1, Z11, Y0
	VPXORQ Y0, Y11, Y11
	VEXTRACTI128 $1, Y11, X0
	VPXOR X0, X11, X11
	VPXOR X12, X11, X11

	VPADDQ Z13, Z14, Z13
	VEXTRACTI64X4 $1, Z13, Y0
	VPADDQ Y0, Y13, Y13
	VEXTRACTI128 $1, Y13, X0
	VPADDQ X0, X13, X13
	VPSHUFD $0x4e, X13, X0
	VPADDQ X0, X13, X13
	VMOVQ X13, le+40(FP)
	VZEROUPPER

	MOVOU X11, X0
	FINISH(X0)
	MOVL AX, crcOut+48(FP)
	RET

// func crcFold16(crc uint32, p *byte, n int, keys *foldKeys) uint32
TEXT ·crcFold16(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), AX
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ keys+24(FP), DX
	NOTL AX
	MOVOU (SI), X0
	MOVL AX, X1
	PXOR X1, X0
	MOVOU 128(DX), X4
	ADDQ $16, SI
	SUBQ $16, CX
	JZ done16

loop16:
	MOVOU X0, X1
	PCLMULQDQ $0x00, X4, X0
	PCLMULQDQ $0x11, X4, X1
	MOVOU (SI), X2
	PXOR X1, X0
	PXOR X2, X0
	ADDQ $16, SI
	SUBQ $16, CX
	JNZ loop16

done16:
	FINISH(X0)
	MOVL AX, ret+32(FP)
	RET
