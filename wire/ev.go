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
