package roce

import (
	"fmt"

	"github.com/openmrc/mrc"
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
	// The baseline keeps RoCE's open model: one domain, every region
	// remotely writable (docs/security.md).
	r, err := e.mem.Register(length, buf, 0, true, e.rng.Uint32())
	if err != nil {
		return mrc.MR{}, fmt.Errorf("%w: %v (%d bytes)", mrc.ErrInvalidAttr, err, length)
	}
	return mrc.MR{Key: r.Key, Addr: r.Addr, Len: r.Len}, nil
}

// DeregisterMemory removes the region with key. WRITEs still posted from
// or targeting it fail afterwards.
func (e *Endpoint) DeregisterMemory(key uint32) error {
	if !e.mem.Deregister(key) {
		return mrc.ErrBadMR
	}
	return nil
}
