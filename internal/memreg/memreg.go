// Package memreg is the memory-region table an RDMA endpoint keeps: keys,
// virtual addresses and bounds checks. Both the MRC core and the RoCE
// baseline use it.
package memreg

import "errors"

// Errors from Register.
var (
	ErrTooLarge = errors.New("memory region too large")
	ErrTooMany  = errors.New("too many memory regions")
)

// Region is a registered memory region. Buf is nil for a phantom region,
// which has a length but no bytes (simulations place nothing).
type Region struct {
	Key  uint32 // L_Key and R_Key: index<<8 | tag
	Addr uint64 // virtual address of the first byte
	Len  uint64 // length in bytes
	Buf  []byte
	used bool
}

// MaxLen is the largest region.
const MaxLen = 1 << 48

const (
	vaBase  = 1 << 32 // the first region's address
	vaGuard = 1 << 12 // unmapped gap between regions
	maxRegs = 1 << 24 // the key's index bits
)

// Table holds the regions of one endpoint. The zero value is ready to use.
// It is not safe for concurrent use.
type Table struct {
	regions []Region
	nextVA  uint64
}

// Register adds a region of length bytes backed by buf (nil: phantom).
// tag becomes the key's low byte, so that a stale or guessed key fails;
// callers pass a random byte.
func (t *Table) Register(length uint64, buf []byte, tag uint8) (Region, error) {
	if length > MaxLen {
		return Region{}, ErrTooLarge
	}
	idx := len(t.regions)
	for i := range t.regions {
		if !t.regions[i].used {
			idx = i
			break
		}
	}
	if idx == len(t.regions) {
		if idx >= maxRegs {
			return Region{}, ErrTooMany
		}
		t.regions = append(t.regions, Region{})
	}
	if t.nextVA == 0 {
		t.nextVA = vaBase
	}
	r := Region{Key: uint32(idx)<<8 | uint32(tag), Addr: t.nextVA, Len: length, Buf: buf, used: true}
	t.nextVA += (length+vaGuard-1)/vaGuard*vaGuard + vaGuard
	t.regions[idx] = r
	return r, nil
}

// Deregister removes the region with key and reports whether it existed.
func (t *Table) Deregister(key uint32) bool {
	r := t.Lookup(key)
	if r == nil {
		return false
	}
	*r = Region{}
	return true
}

// Lookup returns the region with key, or nil.
func (t *Table) Lookup(key uint32) *Region {
	idx := int(key >> 8)
	if idx >= len(t.regions) {
		return nil
	}
	r := &t.regions[idx]
	if !r.used || r.Key != key {
		return nil
	}
	return r
}

// Span returns the offset of [va, va+n) in r, checking that it lies inside
// the region without overflowing.
func (r *Region) Span(va, n uint64) (off uint64, ok bool) {
	if va < r.Addr {
		return 0, false
	}
	off = va - r.Addr
	if off > r.Len || n > r.Len-off {
		return 0, false
	}
	return off, true
}
