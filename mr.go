package mrc

import "fmt"

// MR describes a registered memory region: what a peer needs to WRITE
// into it. Applications exchange it out of band, as with verbs.
type MR struct {
	Key  uint32 // L_Key and R_Key (layout: docs/security.md)
	Addr uint64 // virtual address of the first byte
	Len  uint64 // length in bytes
}

// Access is what a memory region allows beyond the local reads of the
// endpoint's own QPs (the IBTA access flags MRC uses). The zero value is
// AccessLocal.
type Access uint8

const (
	// AccessLocal: the region is a WRITE source only; no peer may write
	// into it.
	AccessLocal Access = 0
	// AccessRemoteWrite: the peer of a QP in the region's protection
	// domain may WRITE into it.
	AccessRemoteWrite Access = 1 << 0
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
		return 0, fmt.Errorf("%w: protection domain of another endpoint", ErrInvalidAttr)
	}
	return pd.id, nil
}

// RegisterMemory registers buf in the default protection domain for
// local reads and, with AccessRemoteWrite, remote WRITEs, and returns its
// descriptor. The endpoint reads and writes buf until it is deregistered;
// the caller must not resize it.
func (e *Endpoint) RegisterMemory(buf []byte, access Access) (MR, error) {
	return e.RegisterMemoryPD(PD{}, buf, access)
}

// RegisterMemoryPD is RegisterMemory in protection domain pd.
func (e *Endpoint) RegisterMemoryPD(pd PD, buf []byte, access Access) (MR, error) {
	if len(buf) == 0 {
		return MR{}, fmt.Errorf("%w: empty memory region", ErrInvalidAttr)
	}
	return e.register(pd, uint64(len(buf)), buf, access)
}

// RegisterPhantom registers a region of length bytes that has no memory,
// in the default protection domain: WRITEs from it carry no payload bytes
// and WRITEs into it place nothing, while every packet keeps its true
// length on the wire. Simulations use it to move terabytes without holding
// them. An endpoint accepts short (phantom) datagrams only while it has a
// phantom region, and places them only into one.
func (e *Endpoint) RegisterPhantom(length uint64, access Access) (MR, error) {
	if length == 0 {
		return MR{}, fmt.Errorf("%w: empty memory region", ErrInvalidAttr)
	}
	return e.register(PD{}, length, nil, access)
}

func (e *Endpoint) register(pd PD, length uint64, buf []byte, access Access) (MR, error) {
	id, err := e.pdID(pd)
	if err != nil {
		return MR{}, err
	}
	if access&^AccessRemoteWrite != 0 {
		return MR{}, fmt.Errorf("%w: access flags %#x", ErrInvalidAttr, uint8(access))
	}
	r, err := e.mem.Register(length, buf, id, access&AccessRemoteWrite != 0, e.rng.Uint32())
	if err != nil {
		return MR{}, fmt.Errorf("%w: %v (%d bytes)", ErrInvalidAttr, err, length)
	}
	if buf == nil {
		e.phantoms++
	}
	return MR{Key: r.Key, Addr: r.Addr, Len: r.Len}, nil
}

// DeregisterMemory removes the region with key. WRITEs still posted from
// or targeting it fail their bounds checks afterwards.
func (e *Endpoint) DeregisterMemory(key uint32) error {
	r := e.mem.Lookup(key)
	if r == nil {
		return ErrBadMR
	}
	if r.Buf == nil {
		e.phantoms--
	}
	e.mem.Deregister(key)
	return nil
}
