// Package plan sizes full-bisection Clos fabrics for MRC: multi-plane
// two-tier designs, where each NIC is split into P ports and every port
// joins its own independent Clos (a plane), and three-tier designs, of which
// the single-plane one is the classic baseline.
//
// Everything here is a pure function of its parameters: no I/O, no clock, no
// randomness. The counting rules are stated on the types and in docs/plan.md.
//
// Vocabulary used throughout:
//
//   - A GPU has one NIC of NICGbps, split into Planes ports of PortGbps each
//     (PortGbps = NICGbps / Planes), one port per plane.
//   - Radix is the number of ports of one switch at PortGbps. A switch of
//     SwitchGbps has SwitchGbps/PortGbps ports.
//   - Full bisection: a T0 has Radix/2 ports down to NICs and Radix/2 up; a
//     T1 below a T2 tier likewise has Radix/2 down and Radix/2 up; the top
//     tier uses all Radix ports down.
//   - Every T0 is wired with all Radix/2 uplinks, even the last, partly
//     filled one, so every T0 of a plane looks alike to source routing and
//     the fabric can grow to its maximum without rewiring. Switch counts are
//     rounded up.
package plan

import (
	"fmt"
	"github.com/openmrc/mrc/faults"
	"math/bits"
)

// Limits on the parameters. They keep every count well inside an int64 and
// reject values that describe no real switch or NIC.
const (
	MaxRadix   = 1 << 16 // ports per switch
	MaxPlanes  = 1024    // ports per NIC
	MaxNICGbps = 1 << 20 // about 1 Pb/s
)

// Params describes the cluster to plan. The zero value is not valid: GPUs,
// Planes, NICGbps and at least one of SwitchGbps and Radix must be set.
type Params struct {
	// GPUs is the number of GPUs, each with one NIC. At least 1.
	GPUs int `json:"gpus"`
	// Planes is the number of planes P. Each NIC is split into P ports of
	// NICGbps/P, one per plane, and each plane is an independent Clos.
	// P must divide NICGbps.
	Planes int `json:"planes"`
	// NICGbps is the speed of one NIC in Gb/s, e.g. 800.
	NICGbps int `json:"nic_gbps"`
	// SwitchGbps is the capacity of one switch in Gb/s, e.g. 51200. Zero
	// means Radix × PortGbps. If both it and Radix are set they must agree.
	SwitchGbps int `json:"switch_gbps"`
	// Radix is the number of ports of one switch at PortGbps: even, at
	// least 2. Zero means SwitchGbps / PortGbps, which must be a whole
	// number.
	Radix int `json:"radix"`

	// Power figures in watts; zero takes the default (docs/plan.md).
	// SwitchW is one switch without transceivers (default 913 W per
	// 51.2 Tb/s of SwitchGbps); OpticW is one 800G transceiver, of which
	// a port of s Gb/s draws s/800 (default 16 W); NICW is one NIC
	// without transceivers (default 25 W).
	SwitchW float64 `json:"switch_w"`
	OpticW  float64 `json:"optic_w"`
	NICW    float64 `json:"nic_w"`
	// Rates replaces the default failure rates of the classes it names
	// (faults.Defaults for the others; docs/failures.md).
	Rates faults.Table `json:"rates,omitempty"`
}

// PortGbps is the speed of one NIC port, and of every link in a plane:
// NICGbps / Planes. It is meaningful only for valid Params.
func (p Params) PortGbps() int {
	if p.Planes <= 0 {
		return 0
	}
	return p.NICGbps / p.Planes
}

// ParamError reports an invalid parameter. Field is the snake_case JSON
// name of the offending Params field ("gpus", "planes", "nic_gbps",
// "switch_gbps" or "radix"), so a CLI can map it to its flag.
type ParamError struct {
	Field string
	Msg   string
}

func (e *ParamError) Error() string { return e.Field + ": " + e.Msg }

func paramErr(field, format string, args ...any) error {
	return &ParamError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Resolve validates p and returns it with SwitchGbps and Radix both filled
// in. Errors are *ParamError.
func (p Params) Resolve() (Params, error) {
	switch {
	case p.GPUs < 1:
		return p, paramErr("gpus", "need at least 1 GPU, got %d", p.GPUs)
	case p.Planes < 1:
		return p, paramErr("planes", "need at least 1 plane, got %d", p.Planes)
	case p.Planes > MaxPlanes:
		return p, paramErr("planes", "%d planes is more than the %d this planner allows", p.Planes, MaxPlanes)
	case p.NICGbps < 1:
		return p, paramErr("nic_gbps", "NIC speed must be positive, got %d", p.NICGbps)
	case p.NICGbps > MaxNICGbps:
		return p, paramErr("nic_gbps", "NIC speed %d Gb/s is above the %d this planner allows", p.NICGbps, MaxNICGbps)
	case p.NICGbps%p.Planes != 0:
		return p, paramErr("planes", "%d planes do not split the %dG NIC into whole-Gb/s ports", p.Planes, p.NICGbps)
	case p.SwitchGbps < 0:
		return p, paramErr("switch_gbps", "switch capacity must be positive, got %d", p.SwitchGbps)
	case p.Radix < 0:
		return p, paramErr("radix", "must be positive, got %d", p.Radix)
	case p.SwitchGbps == 0 && p.Radix == 0:
		return p, paramErr("switch_gbps", "give the switch capacity or the radix")
	}
	port := p.PortGbps()
	if p.Radix == 0 {
		if p.SwitchGbps%port != 0 {
			return p, paramErr("switch_gbps", "a %dG switch is not a whole number of %dG ports", p.SwitchGbps, port)
		}
		// Divide before checking the radix so that a huge switch capacity
		// cannot overflow anything.
		r := p.SwitchGbps / port
		if r > MaxRadix {
			return p, paramErr("switch_gbps", "a %dG switch has %d ports of %dG, more than the %d this planner allows", p.SwitchGbps, r, port, MaxRadix)
		}
		p.Radix = r
	}
	switch {
	case p.Radix > MaxRadix:
		return p, paramErr("radix", "%d ports is more than the %d this planner allows", p.Radix, MaxRadix)
	case p.Radix < 2 || p.Radix%2 != 0:
		return p, paramErr("radix", "must be even and at least 2 (half the ports down, half up), got %d", p.Radix)
	}
	if p.SwitchGbps == 0 {
		p.SwitchGbps = p.Radix * port
	} else if p.Radix*port != p.SwitchGbps {
		return p, paramErr("radix", "%d ports of %dG make %dG, not the %dG switch given; give one of them", p.Radix, port, p.Radix*port, p.SwitchGbps)
	}
	return p.resolvePower()
}

// MaxGPUs returns the most GPUs a full-bisection Clos of the given number of
// tiers can serve per plane with switches of the given radix:
// 2·(radix/2)^tiers, that is radix for one switch, radix²/2 for two tiers
// and radix³/4 for three. The number of planes does not change it: every
// plane reaches every GPU. It returns 0 for tiers < 1 or radix < 2 and
// saturates at the largest int rather than overflowing.
func MaxGPUs(tiers, radix int) int {
	if tiers < 1 || radix < 2 {
		return 0
	}
	const maxInt = int(^uint(0) >> 1)
	n := uint64(2)
	for range tiers {
		hi, lo := bits.Mul64(n, uint64(radix/2))
		if hi != 0 || lo > uint64(maxInt) {
			return maxInt
		}
		n = lo
	}
	return int(n)
}

// count formats n with thousands separators: 131072 → "131,072".
func count(n int) string {
	if n < 0 {
		return "-" + count(-n)
	}
	s := fmt.Sprint(n)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// ceilDiv returns ⌈a/b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }
