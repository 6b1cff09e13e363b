package mrc

import "fmt"

// MR describes a registered memory region: what a peer needs to WRITE
// into it. Applications exchange it out of band, as with verbs.
type MR struct {
	Key  uint32 // L_Key and R_Key
	Addr uint64 // virtual address of the first byte
	Len  uint64 // length in bytes
}

// region is a registered MR and its memory. buf is nil for a phantom region,
// which has a length but no bytes (simulations place nothing).
type region struct {
	MR
	buf   []byte
	inUse bool
}

const (
	vaBase  = 1 << 32 // the first region's address
	vaGuard = 1 << 12 // unmapped gap between regions
)

// RegisterMemory registers buf for local reads and remote WRITEs and
// returns its descriptor. The endpoint reads and writes buf until it is
// deregistered; the caller must not resize it.
func (e *Endpoint) RegisterMemory(buf []byte) (MR, error) {
	if len(buf) == 0 {
		return MR{}, fmt.Errorf("%w: empty memory region", ErrInvalidAttr)
	}
	return e.register(uint64(len(buf)), buf)
}

// RegisterPhantom registers a region of length bytes that has no memory:
// WRITEs from it carry no payload bytes and WRITEs into it place nothing,
// while every packet keeps its true length on the wire. Simulations use it
// to move terabytes without holding them.
func (e *Endpoint) RegisterPhantom(length uint64) (MR, error) {
	if length == 0 {
		return MR{}, fmt.Errorf("%w: empty memory region", ErrInvalidAttr)
	}
	return e.register(length, nil)
}

func (e *Endpoint) register(length uint64, buf []byte) (MR, error) {
	if length > 1<<48 {
		return MR{}, fmt.Errorf("%w: memory region of %d bytes", ErrInvalidAttr, length)
	}
	idx := len(e.regions)
	for i := range e.regions {
		if !e.regions[i].inUse {
			idx = i
			break
		}
	}
	if idx == len(e.regions) {
		if idx >= 1<<24 {
			return MR{}, fmt.Errorf("%w: too many memory regions", ErrInvalidAttr)
		}
		e.regions = append(e.regions, region{})
	}
	// The key's low byte is a tag so that a stale or guessed key fails.
	key := uint32(idx)<<8 | uint32(e.rng.Uint32()&0xff)
	mr := MR{Key: key, Addr: e.nextVA, Len: length}
	e.nextVA += (length+vaGuard-1)/vaGuard*vaGuard + vaGuard
	e.regions[idx] = region{MR: mr, buf: buf, inUse: true}
	return mr, nil
}

// DeregisterMemory removes the region with key. WRITEs still posted from
// or targeting it fail their bounds checks afterwards.
func (e *Endpoint) DeregisterMemory(key uint32) error {
	r := e.lookupRegion(key)
	if r == nil {
		return ErrBadMR
	}
	*r = region{}
	return nil
}

func (e *Endpoint) lookupRegion(key uint32) *region {
	idx := int(key >> 8)
	if idx >= len(e.regions) {
		return nil
	}
	r := &e.regions[idx]
	if !r.inUse || r.Key != key {
		return nil
	}
	return r
}

// span returns the offset of [va, va+n) in r, checking that it lies inside
// the region without overflowing.
func (r *region) span(va, n uint64) (off uint64, ok bool) {
	if va < r.Addr {
		return 0, false
	}
	off = va - r.Addr
	if off > r.Len || n > r.Len-off {
		return 0, false
	}
	return off, true
}
