package wire

import "fmt"

// EV is a 32-bit entropy value: the per-packet path selector MRC stripes
// over the UDP source port and the IPv6 flow label (digest §3.2, §3.4).
//
// Bit order (our choice; the emulator's order, digest §3.2 [S]): the UDP
// source port carries EV[31:16] and the low 16 bits of the flow label
// carry EV[15:0]; the top 4 flow-label bits are 0.
type EV uint32

// EV striping, our choice (digest §3.2 [S], to be confirmed).
const (
	evSportShift = 16
	evFlowMask   = 0xFFFF
)

// SplitEV returns the UDP source port and IPv6 flow label that carry ev.
func SplitEV(ev EV) (sport uint16, flowLabel uint32) {
	return uint16(ev >> evSportShift), uint32(ev) & evFlowMask
}

// JoinEV reassembles the EV carried by sport and flowLabel. The top 4 bits
// of the 20-bit flow label are ignored.
func JoinEV(sport uint16, flowLabel uint32) EV {
	return EV(uint32(sport)<<evSportShift | flowLabel&evFlowMask)
}

// String formats ev as 8 hex digits.
func (ev EV) String() string { return fmt.Sprintf("0x%08x", uint32(ev)) }

// EV layout (our choice, docs/spec-gaps.md): the UDP source port half is
// 0b11 followed by the EV's 14-bit slot in its QP's EV table, so that a
// reflected EV finds its slot without a lookup table, and sits in the
// RoCEv2 source-port range 0xC000–0xFFFF; the flow-label half is the
// plane (4 bits) and the path index within the plane (12 bits).
const (
	// MaxEVPlanes is the number of planes an EV can name.
	MaxEVPlanes = 1 << evPlaneBits
	// MaxEVPaths is the number of paths per plane an EV can name.
	MaxEVPaths = 1 << evPathBits
	// MaxEVSlots is the number of EV table slots an EV can name.
	MaxEVSlots = 1 << evSlotBits

	evPathBits  = 12
	evPlaneBits = 4
	evSlotBits  = 14
	evSlotMark  = 0xC000_0000
)

// NewEV returns the EV of slot in its QP's EV table, on plane and path.
// Each argument must be below its Max constant; higher bits are cut.
func NewEV(slot, plane, path int) EV {
	return EV(evSlotMark | uint32(slot&(MaxEVSlots-1))<<evSportShift |
		uint32(plane&(MaxEVPlanes-1))<<evPathBits | uint32(path&(MaxEVPaths-1)))
}

// Plane returns the plane ev belongs to.
func (ev EV) Plane() int { return int(ev>>evPathBits) & (MaxEVPlanes - 1) }

// Path returns the path index of ev within its plane: in SRv6 mode it
// selects the path's uplink (the T1 switch of a two-tier plane).
func (ev EV) Path() int { return int(ev & (MaxEVPaths - 1)) }

// Slot returns the slot ev names in its QP's EV table, and false if ev
// does not carry the layout's slot mark (it was not made by NewEV).
func (ev EV) Slot() (int, bool) {
	if ev&evSlotMark != evSlotMark {
		return 0, false
	}
	return int(ev>>evSportShift) & (MaxEVSlots - 1), true
}
