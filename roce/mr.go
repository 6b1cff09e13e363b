package roce

import (
	"fmt"

	"github.com/openmrc/mrc"
)

// region is a registered memory region. buf is nil for a phantom region,
// which has a length but no bytes.
type region struct {
	mrc.MR
	buf   []byte
	inUse bool
}

const (
	vaBase  = 1 << 32 // the first region's address
	vaGuard = 1 << 12 // unmapped gap between regions
)

// RegisterMemory registers buf for local reads and remote WRITEs and
// returns its descriptor, which a peer needs to WRITE into it. The
// endpoint reads and writes buf until it is deregistered.
func (e *Endpoint) RegisterMemory(buf []byte) (mrc.MR, error) {
	if len(buf) == 0 {
		return mrc.MR{}, fmt.Errorf("%w: empty memory region", mrc.ErrInvalidAttr)
	}
	return e.register(uint64(len(buf)), buf)
}

// RegisterPhantom registers a region of length bytes that has no memory:
// WRITEs from it carry no payload bytes and WRITEs into it place nothing,
// while every packet keeps its true length on the wire (as the MRC core's
// RegisterPhantom).
func (e *Endpoint) RegisterPhantom(length uint64) (mrc.MR, error) {
	if length == 0 {
		return mrc.MR{}, fmt.Errorf("%w: empty memory region", mrc.ErrInvalidAttr)
	}
	return e.register(length, nil)
}

func (e *Endpoint) register(length uint64, buf []byte) (mrc.MR, error) {
	if length > 1<<48 {
		return mrc.MR{}, fmt.Errorf("%w: memory region of %d bytes", mrc.ErrInvalidAttr, length)
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
			return mrc.MR{}, fmt.Errorf("%w: too many memory regions", mrc.ErrInvalidAttr)
		}
		e.regions = append(e.regions, region{})
	}
	// The key's low byte is a random tag, so that a stale or guessed key
	// fails.
	key := uint32(idx)<<8 | uint32(e.rng.Uint32()&0xff)
	mr := mrc.MR{Key: key, Addr: e.nextVA, Len: length}
	e.nextVA += (length+vaGuard-1)/vaGuard*vaGuard + vaGuard
	e.regions[idx] = region{MR: mr, buf: buf, inUse: true}
	return mr, nil
}

// DeregisterMemory removes the region with key. WRITEs still posted from
// or targeting it fail afterwards.
func (e *Endpoint) DeregisterMemory(key uint32) error {
	r := e.lookupRegion(key)
	if r == nil {
		return mrc.ErrBadMR
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

// span returns the offset of [va, va+n) in r, checking that it lies
// inside the region without overflowing.
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
