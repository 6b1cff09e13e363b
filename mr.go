package mrc

import "fmt"

// MR describes a registered memory region: what a peer needs to WRITE
// into it. Applications exchange it out of band, as with verbs.
type MR struct {
	Key  uint32 // L_Key and R_Key
	Addr uint64 // virtual address of the first byte
	Len  uint64 // length in bytes
}

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
	r, err := e.mem.Register(length, buf, uint8(e.rng.Uint32()))
	if err != nil {
		return MR{}, fmt.Errorf("%w: %v (%d bytes)", ErrInvalidAttr, err, length)
	}
	return MR{Key: r.Key, Addr: r.Addr, Len: r.Len}, nil
}

// DeregisterMemory removes the region with key. WRITEs still posted from
// or targeting it fail their bounds checks afterwards.
func (e *Endpoint) DeregisterMemory(key uint32) error {
	if !e.mem.Deregister(key) {
		return ErrBadMR
	}
	return nil
}
