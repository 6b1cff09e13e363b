// Package psn is wraparound-safe arithmetic on the 24-bit packet sequence
// numbers of the RoCE BTH, which MRC keeps (digest §3.3).
//
// Two PSNs are compared by their signed distance modulo 2^24, so comparisons
// are meaningful only between PSNs less than 2^23 apart; every window the
// protocol uses (the MPR tracking window, at most 255×128 PSNs) is far
// smaller than that.
package psn

// PSN is a 24-bit packet sequence number. Values above Mask never appear:
// every operation reduces modulo 2^24.
type PSN uint32

// Bits is the width of a PSN; Mask is the largest PSN.
const (
	Bits = 24
	Mask = 1<<Bits - 1
)

// Add returns p+n modulo 2^24; n may be negative.
func (p PSN) Add(n int) PSN { return PSN((int64(p) + int64(n)) & Mask) }

// Sub returns the signed distance p-q, in [-2^23, 2^23).
func (p PSN) Sub(q PSN) int {
	d := int32(uint32(p-q)<<(32-Bits)) >> (32 - Bits)
	return int(d)
}

// Less reports whether p comes before q.
func (p PSN) Less(q PSN) bool { return p.Sub(q) < 0 }

// InWindow reports whether p lies in the n PSNs starting at lo: lo <= p < lo+n.
func (p PSN) InWindow(lo PSN, n int) bool {
	d := p.Sub(lo)
	return d >= 0 && d < n
}
