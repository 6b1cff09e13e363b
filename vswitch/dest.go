package vswitch

import "encoding/binary"

// InfiniBand's two ways of choosing among equal-cost ports.
//
// A subnet manager fills each switch's linear forwarding table with one
// output port per destination LID; for fat trees, OpenSM's ftree and
// up/down engines spread the destinations over a switch's up ports by
// D-mod-k: destination d leaves a switch at tier t through up port
// (d / k_0·…·k_{t-1}) mod k_t, k_i being tier i's up-port count, which
// makes the downward paths of a permutation free of contention. Without
// IB's LIDs, a destination's LID is the last 32 bits of its IPv6 address
// (its interface ID), 1-based as LIDs are; a packet without one (0) takes
// its group's first port.
//
// Adaptive routing (as NVIDIA's switches do it) sends each packet out of
// the least-loaded port of the group, by bytes queued, among the ports
// that are up: a dead port is avoided at once. Ties go to the port the
// forwarding table would have chosen, then round the group from there,
// so an idle fabric routes as the static one does.

// LID returns the LID a destination address carries: its last 32 bits.
func LID(addr *[16]byte) uint32 { return binary.BigEndian.Uint32(addr[12:]) }

// SetLID writes lid into the last 32 bits of addr.
func SetLID(addr *[16]byte, lid uint32) { binary.BigEndian.PutUint32(addr[12:], lid) }

// destIndex returns D-mod-k's index (before the modulo) of destination
// dst.
func (s *Switch) destIndex(dst *[16]byte) uint64 {
	lid := LID(dst)
	if lid == 0 {
		return 0
	}
	return uint64((lid - 1) / s.cfg.DestDiv)
}

// adaptive returns the least-loaded port of group sp that is up,
// starting from index first (mod the group's size) and keeping the
// earliest on ties; the static choice if none is up.
func (s *Switch) adaptive(sp span, first uint64) int {
	n := uint64(sp.n)
	g := s.groups[sp.off : sp.off+sp.n]
	best, bestLoad := int(g[first%n]), -1
	for i := range n {
		p := int(g[(first+i)%n])
		pt := &s.ports[p]
		if !pt.up {
			continue
		}
		if load := pt.dataBytes + pt.hdrBytes; bestLoad < 0 || load < bestLoad {
			best, bestLoad = p, load
		}
	}
	return best
}
