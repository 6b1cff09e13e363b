package wire

import "encoding/binary"

// USIDFormat describes SRv6 micro-SID containers (RFC 9800 NEXT-C-SID;
// digest §3.12): an IPv6 destination address made of a BlockBits-bit
// locator block followed by CSIDBits-bit compressed SIDs, one per node of
// the path, the first of them active. A zero CSID ends the container.
//
// A format is valid when BlockBits >= 0, 1 <= CSIDBits <= 32 and
// BlockBits+CSIDBits <= 128. Methods of an invalid format return zero
// values and leave addresses alone. Addresses are big-endian; bit 0 is the
// MSB of byte 0.
type USIDFormat struct {
	BlockBits int // locator block length in bits
	CSIDBits  int // length of each CSID in bits
}

// F3216 is the format MRC deploys: a 32-bit block and 16-bit uSIDs, six of
// them per address (digest §3.12).
var F3216 = USIDFormat{BlockBits: 32, CSIDBits: 16}

// Valid reports whether f describes a usable format.
func (f USIDFormat) Valid() bool {
	return f.BlockBits >= 0 && f.CSIDBits >= 1 && f.CSIDBits <= 32 && f.BlockBits+f.CSIDBits <= 128
}

// Slots returns how many whole CSIDs fit after the block.
func (f USIDFormat) Slots() int {
	if !f.Valid() {
		return 0
	}
	return (128 - f.BlockBits) / f.CSIDBits
}

// Container returns the address block | csids[0] | csids[1] | … with the
// remaining bits zero. Only the first BlockBits bits of block are used;
// CSIDs are truncated to CSIDBits bits, and CSIDs beyond Slots() are
// dropped. It does not allocate when called with a list of arguments.
func (f USIDFormat) Container(block [16]byte, csids ...uint32) [16]byte {
	var a [16]byte
	if !f.Valid() {
		return a
	}
	load(&block).and(topBits(uint(f.BlockBits))).store(&a)
	for i, c := range csids {
		f.SetCSID(&a, i, c)
	}
	return a
}

// CSID returns CSID i of addr (0 is the active one), or 0 if i is not in
// [0, Slots()).
func (f USIDFormat) CSID(addr [16]byte, i int) uint32 {
	if i < 0 || i >= f.Slots() {
		return 0
	}
	pos := uint(f.BlockBits + i*f.CSIDBits)
	return uint32(load(&addr).shl(pos).hi >> (64 - uint(f.CSIDBits)))
}

// SetCSID sets CSID i of *addr to csid (truncated to CSIDBits bits). It
// does nothing if i is not in [0, Slots()). Building a path in place with
// SetCSID does not allocate.
func (f USIDFormat) SetCSID(addr *[16]byte, i int, csid uint32) {
	if i < 0 || i >= f.Slots() {
		return
	}
	c := uint(f.CSIDBits)
	at := 128 - uint(f.BlockBits+i*f.CSIDBits) - c // shift from the LSB end
	field := u128{lo: 1<<c - 1}
	load(addr).andNot(field.shl(at)).or(u128{lo: uint64(csid) & field.lo}.shl(at)).store(addr)
}

// Active returns the active CSID of addr: the one right after the block.
func (f USIDFormat) Active(addr [16]byte) uint32 { return f.CSID(addr, 0) }

// Node returns the address of the node addr is currently at: block |
// active CSID, the rest zero. A uN switch matches it against its own
// address, and routes on it after a Shift (digest §3.12).
func (f USIDFormat) Node(addr [16]byte) [16]byte {
	var n [16]byte
	if f.Valid() {
		load(&addr).and(topBits(uint(f.BlockBits + f.CSIDBits))).store(&n)
	}
	return n
}

// Shift performs the uN (End with NEXT-C-SID) rewrite of RFC 9800 on
// *addr: if any CSID follows the active one, it shifts the CSIDs left by
// CSIDBits, zero-filling, so the next one becomes active, and reports
// true. If none follows (end of the container), it leaves *addr alone and
// reports false: the node holding the active CSID is the destination, or
// must take the next segment from an SRH.
func (f USIDFormat) Shift(addr *[16]byte) bool {
	if !f.Valid() {
		return false
	}
	b := uint(f.BlockBits)
	x := load(addr)
	arg := x.shl(b + uint(f.CSIDBits))
	if arg.isZero() {
		return false
	}
	x.and(topBits(b)).or(arg.shr(b)).store(addr)
	return true
}

// Final returns addr as the last node of its path sees it, after every
// Shift: block | last CSID | zeros for a well-formed container. That is
// the destination the UDP checksum and the ICRC of an inline-uSID packet
// are computed with (RFC 8200 §8.1).
func (f USIDFormat) Final(addr [16]byte) [16]byte {
	for f.Shift(&addr) {
	}
	return addr
}

// u128 is a 128-bit address as two big-endian halves.
type u128 struct{ hi, lo uint64 }

func load(a *[16]byte) u128 {
	return u128{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])}
}

func (x u128) store(a *[16]byte) {
	binary.BigEndian.PutUint64(a[:8], x.hi)
	binary.BigEndian.PutUint64(a[8:], x.lo)
}

func (x u128) isZero() bool       { return x.hi|x.lo == 0 }
func (x u128) and(y u128) u128    { return u128{x.hi & y.hi, x.lo & y.lo} }
func (x u128) andNot(y u128) u128 { return u128{x.hi &^ y.hi, x.lo &^ y.lo} }
func (x u128) or(y u128) u128     { return u128{x.hi | y.hi, x.lo | y.lo} }
func topBits(n uint) u128         { return u128{^uint64(0), ^uint64(0)}.shr(n).not() }
func (x u128) not() u128          { return u128{^x.hi, ^x.lo} }

// shl shifts x left by n bits; n >= 128 gives 0.
func (x u128) shl(n uint) u128 {
	switch {
	case n >= 128:
		return u128{}
	case n >= 64:
		return u128{x.lo << (n - 64), 0}
	case n == 0:
		return x
	}
	return u128{x.hi<<n | x.lo>>(64-n), x.lo << n}
}

// shr shifts x right by n bits; n >= 128 gives 0.
func (x u128) shr(n uint) u128 {
	switch {
	case n >= 128:
		return u128{}
	case n >= 64:
		return u128{0, x.hi >> (n - 64)}
	case n == 0:
		return x
	}
	return u128{x.hi >> n, x.lo>>n | x.hi<<(64-n)}
}
