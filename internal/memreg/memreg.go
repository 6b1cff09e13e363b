// Package memreg is the memory-region table an RDMA endpoint keeps: keys,
// virtual addresses, protection domains, access rights and bounds checks.
// Both the MRC core and the RoCE baseline use it.
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
	Key         uint32 // L_Key and R_Key: index<<TagBits | tag
	Addr        uint64 // virtual address of the first byte
	Len         uint64 // length in bytes
	Buf         []byte
	PD          uint32 // protection domain
	RemoteWrite bool   // peers of QPs in PD may WRITE into it
	used        bool
}

// Key layout (docs/security.md): the low TagBits bits of a key are a
// random tag drawn at registration, the high IndexBits the region's slot
// in the table. A blind guess of a live key succeeds with probability
// 2^-TagBits per try.
const (
	TagBits    = 20
	IndexBits  = 32 - TagBits
	MaxRegions = 1 << IndexBits
	tagMask    = 1<<TagBits - 1
)

// MaxLen is the largest region.
const MaxLen = 1 << 48

const (
	vaBase  = 1 << 32 // the first region's address
	vaGuard = 1 << 12 // unmapped gap between regions
)

// Table holds the regions of one endpoint. The zero value is ready to use.
// It is not safe for concurrent use.
type Table struct {
	regions []Region
	lastKey []uint32 // by slot: the key it held last, never handed out again at once
	nextVA  uint64
}

// Register adds a region of length bytes backed by buf (nil: phantom) to
// protection domain pd, remotely writable if remoteWrite. tag supplies the
// key's low TagBits bits, so that a stale or guessed key fails; callers
// pass random bits. A slot reused after deregistration never gets back
// the key it had.
func (t *Table) Register(length uint64, buf []byte, pd uint32, remoteWrite bool, tag uint32) (Region, error) {
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
		if idx >= MaxRegions {
			return Region{}, ErrTooMany
		}
		t.regions = append(t.regions, Region{})
		t.lastKey = append(t.lastKey, 0)
	}
	if t.nextVA == 0 {
		t.nextVA = vaBase
	}
	key := uint32(idx)<<TagBits | tag&tagMask
	if key == t.lastKey[idx] {
		key = uint32(idx)<<TagBits | (tag+1)&tagMask
	}
	r := Region{Key: key, Addr: t.nextVA, Len: length, Buf: buf, PD: pd, RemoteWrite: remoteWrite, used: true}
	t.nextVA += (length+vaGuard-1)/vaGuard*vaGuard + vaGuard
	t.regions[idx] = r
	t.lastKey[idx] = key
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
	idx := int(key >> TagBits)
	if idx >= len(t.regions) {
		return nil
	}
	r := &t.regions[idx]
	if !r.used || r.Key != key {
		return nil
	}
	return r
}

// Writable reports whether a peer of a QP in protection domain pd may
// WRITE into r.
func (r *Region) Writable(pd uint32) bool { return r.RemoteWrite && r.PD == pd }

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
