package wire

import "encoding/binary"

// SRH layout, from the spec (RFC 8754 §2).
const (
	SRHFixedLen     = 8 // bytes before the segment list
	SegmentLen      = 16
	RoutingTypeSRH  = 4
	srhOffNextHdr   = 0 // next header
	srhOffHdrExtLen = 1 // length in 8-octet units, not counting the first 8
	srhOffType      = 2 // routing type (4)
	srhOffSegLeft   = 3 // segments left
	srhOffLastEntry = 4 // index of the last entry of the segment list
	srhOffFlags     = 5 // flags
	srhOffTag       = 6 // tag, 16 bits
	srhOffSegments  = 8 // segment list, 16 bytes each
)

// MaxSegments is the most segments an SRH may hold here (our limit, so the
// segment list fits a fixed array and decoding does not allocate). A
// longer list is ErrInvalid.
const MaxSegments = 16

// SRH is the Segment Routing Header (RFC 8754), routing type 4. MRC may
// carry one to extend a uSID path or to keep a copy of it for debugging
// (digest §3.12 [S]).
//
// Segments[0:N] is the segment list in wire order: Segments[0] is the last
// segment of the path (the final destination), Segments[N-1] the first.
// Append derives HdrExtLen and LastEntry from N and emits no TLVs. Decode
// reports the HdrExtLen on the wire, which exceeds 2*N when TLVs follow
// the segment list; the TLVs are skipped.
type SRH struct {
	NextHeader   uint8
	HdrExtLen    uint8 // as decoded; Append writes 2*N
	SegmentsLeft uint8
	LastEntry    uint8 // as decoded; Append writes N-1
	Flags        uint8
	Tag          uint16
	N            int // segments in use, 1..MaxSegments
	Segments     [MaxSegments][16]byte
}

// segs returns N clamped to [0, MaxSegments].
func (h *SRH) segs() int { return min(max(h.N, 0), MaxSegments) }

// Len returns the number of bytes Append writes: SRHFixedLen + 16*N.
func (h *SRH) Len() int { return SRHFixedLen + SegmentLen*h.segs() }

// wireLen returns the length the decoded header had on the wire.
func (h *SRH) wireLen() int { return SRHFixedLen + 8*int(h.HdrExtLen) }

// Append appends the encoding of h (Len bytes) to b. N should be in
// 1..MaxSegments; it is clamped to that range's bounds, and an SRH with
// no segments (which Decode rejects) is written as 8 bytes.
func (h *SRH) Append(b []byte) []byte {
	n := h.segs()
	b, w := grow(b, SRHFixedLen+SegmentLen*n)
	w[srhOffNextHdr] = h.NextHeader
	w[srhOffHdrExtLen] = uint8(2 * n)
	w[srhOffType] = RoutingTypeSRH
	w[srhOffSegLeft] = h.SegmentsLeft
	w[srhOffLastEntry] = uint8(max(n-1, 0))
	w[srhOffFlags] = h.Flags
	binary.BigEndian.PutUint16(w[srhOffTag:], h.Tag)
	for i := range n {
		copy(w[srhOffSegments+SegmentLen*i:], h.Segments[i][:])
	}
	return b
}

// Decode decodes an SRH from the start of b and returns its length on the
// wire, 8*(HdrExtLen+1). It returns ErrUnsupported for a routing type
// other than 4 and ErrInvalid if the segment list does not fit the header
// or holds more than MaxSegments entries.
func (h *SRH) Decode(b []byte) (int, error) {
	if len(b) < SRHFixedLen {
		return 0, ErrTruncated
	}
	if b[srhOffType] != RoutingTypeSRH {
		return 0, ErrUnsupported
	}
	total := SRHFixedLen + 8*int(b[srhOffHdrExtLen])
	n := int(b[srhOffLastEntry]) + 1
	if n > MaxSegments || SRHFixedLen+SegmentLen*n > total {
		return 0, ErrInvalid
	}
	if len(b) < total {
		return 0, ErrTruncated
	}
	*h = SRH{
		NextHeader:   b[srhOffNextHdr],
		HdrExtLen:    b[srhOffHdrExtLen],
		SegmentsLeft: b[srhOffSegLeft],
		LastEntry:    b[srhOffLastEntry],
		Flags:        b[srhOffFlags],
		Tag:          binary.BigEndian.Uint16(b[srhOffTag:]),
		N:            n,
	}
	for i := range n {
		copy(h.Segments[i][:], b[srhOffSegments+SegmentLen*i:])
	}
	return total, nil
}
