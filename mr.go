package mrc

import (
	"fmt"
	"github.com/openmrc/mrc/verbs"
)

// PD is a protection domain: a QP accepts WRITEs only into regions of its
// own PD, and sends only from them. The zero PD is the endpoint's default
// domain, which every QP and region uses unless told otherwise; an
// endpoint serving mutually distrusting peers gives each its own PD.
type PD struct {
	ep *Endpoint
	id uint32
}

// AllocPD returns a new protection domain of the endpoint.
func (e *Endpoint) AllocPD() PD {
	e.pds++
	return PD{ep: e, id: e.pds}
}

// pdID returns the id of pd on e, checking that it is one of e's.
func (e *Endpoint) pdID(pd PD) (uint32, error) {
	if pd.ep != nil && pd.ep != e || pd.id > e.pds {
		return 0, fmt.Errorf("%w: protection domain of another endpoint", verbs.ErrInvalidAttr)
	}
	return pd.id, nil
}

// RegisterMemory registers buf in the default protection domain for
// local reads and, with AccessRemoteWrite, remote WRITEs, and returns its
// descriptor. The endpoint reads and writes buf until it is deregistered;
// the caller must not resize it.
func (e *Endpoint) RegisterMemory(buf []byte, access verbs.Access) (verbs.MR, error) {
	return e.RegisterMemoryPD(PD{}, buf, access)
}

// RegisterMemoryPD is RegisterMemory in protection domain pd.
func (e *Endpoint) RegisterMemoryPD(pd PD, buf []byte, access verbs.Access) (verbs.MR, error) {
	if len(buf) == 0 {
		return verbs.MR{}, fmt.Errorf("%w: empty memory region", verbs.ErrInvalidAttr)
	}
	return e.register(pd, uint64(len(buf)), buf, access)
}

// RegisterPhantom registers a region of length bytes that has no memory,
// in the default protection domain: WRITEs from it carry no payload bytes
// and WRITEs into it place nothing, while every packet keeps its true
// length on the wire. Simulations use it to move terabytes without holding
// them. An endpoint accepts short (phantom) datagrams only while it has a
// phantom region, and places them only into one.
func (e *Endpoint) RegisterPhantom(length uint64, access verbs.Access) (verbs.MR, error) {
	if length == 0 {
		return verbs.MR{}, fmt.Errorf("%w: empty memory region", verbs.ErrInvalidAttr)
	}
	return e.register(PD{}, length, nil, access)
}

func (e *Endpoint) register(pd PD, length uint64, buf []byte, access verbs.Access) (verbs.MR, error) {
	id, err := e.pdID(pd)
	if err != nil {
		return verbs.MR{}, err
	}
	if access&^verbs.AccessRemoteWrite != 0 {
		return verbs.MR{}, fmt.Errorf("%w: access flags %#x", verbs.ErrInvalidAttr, uint8(access))
	}
	r, err := e.mem.Register(length, buf, id, access&verbs.AccessRemoteWrite != 0, e.rng.Uint32())
	if err != nil {
		return verbs.MR{}, fmt.Errorf("%w: %v (%d bytes)", verbs.ErrInvalidAttr, err, length)
	}
	if buf == nil {
		e.phantoms++
	}
	return verbs.MR{Key: r.Key, Addr: r.Addr, Len: r.Len}, nil
}

// DeregisterMemory removes the region with key. WRITEs still posted from
// or targeting it fail their bounds checks afterwards.
func (e *Endpoint) DeregisterMemory(key uint32) error {
	r := e.mem.Lookup(key)
	if r == nil {
		return verbs.ErrBadMR
	}
	if r.Buf == nil {
		e.phantoms--
	}
	e.mem.Deregister(key)
	return nil
}
