package roce

import (
	"fmt"

	"github.com/openmrc/mrc/verbs"
)

// RegisterMemory registers buf for local reads and remote WRITEs and
// returns its descriptor, which a peer needs to WRITE into it. The
// endpoint reads and writes buf until it is deregistered.
func (e *Endpoint) RegisterMemory(buf []byte) (verbs.MR, error) {
	if len(buf) == 0 {
		return verbs.MR{}, fmt.Errorf("%w: empty memory region", verbs.ErrInvalidAttr)
	}
	return e.register(uint64(len(buf)), buf)
}

// RegisterPhantom registers a region of length bytes that has no memory:
// WRITEs from it carry no payload bytes and WRITEs into it place nothing,
// while every packet keeps its true length on the wire (as the MRC core's
// RegisterPhantom).
func (e *Endpoint) RegisterPhantom(length uint64) (verbs.MR, error) {
	if length == 0 {
		return verbs.MR{}, fmt.Errorf("%w: empty memory region", verbs.ErrInvalidAttr)
	}
	return e.register(length, nil)
}

func (e *Endpoint) register(length uint64, buf []byte) (verbs.MR, error) {
	// The baseline keeps RoCE's open model: one domain, every region
	// remotely writable (docs/security.md).
	r, err := e.mem.Register(length, buf, 0, true, e.rng.Uint32())
	if err != nil {
		return verbs.MR{}, fmt.Errorf("%w: %v (%d bytes)", verbs.ErrInvalidAttr, err, length)
	}
	return verbs.MR{Key: r.Key, Addr: r.Addr, Len: r.Len}, nil
}

// DeregisterMemory removes the region with key. WRITEs still posted from
// or targeting it fail afterwards.
func (e *Endpoint) DeregisterMemory(key uint32) error {
	if !e.mem.Deregister(key) {
		return verbs.ErrBadMR
	}
	return nil
}
