package verbs

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
