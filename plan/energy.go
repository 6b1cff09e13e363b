package plan

import (
	"fmt"
	"time"

	"github.com/openmrc/mrc/faults"
)

// The default power figures (docs/plan.md names their sources).
const (
	// DefaultSwitchW is one 51.2 Tb/s switch without transceivers: the
	// UfiSpace S9321-64E's typical power (Tomahawk 5, 64 × 800G).
	DefaultSwitchW = 913.0
	// defaultSwitchGbps is the capacity DefaultSwitchW is for; another
	// capacity scales it.
	defaultSwitchGbps = 51200
	// DefaultOpticW is one 800G transceiver (OSFP/QSFP-DD800, 8 lanes):
	// 800G modules draw 13–18 W; 16 W is an assumption within that range.
	DefaultOpticW = 16.0
	// DefaultNICW is one NIC without its transceivers: an assumption.
	DefaultNICW = 25.0
)

// Power is a design's power draw. The fabric is its switches and every
// transceiver, the NIC ends' included; the NICs themselves are the same
// in every design and counted apart.
type Power struct {
	// SwitchW is one switch without transceivers; TransceiverW one
	// transceiver at the port speed (PortGbps/800 of an 800G module: a
	// port below 800G is a breakout lane); NICPortW one NIC port's share
	// of its NIC.
	SwitchW      float64 `json:"switch_w"`
	TransceiverW float64 `json:"transceiver_w"`
	NICPortW     float64 `json:"nic_port_w"`

	SwitchesKW float64 `json:"switches_kw"` // Total.Switches × SwitchW
	OpticsKW   float64 `json:"optics_kw"`   // Total.Transceivers × TransceiverW
	FabricKW   float64 `json:"fabric_kw"`   // switches + optics
	NICsKW     float64 `json:"nics_kw"`     // GPUs × NIC
	TotalKW    float64 `json:"total_kw"`    // fabric + NICs

	FabricWPerGPU float64 `json:"fabric_w_per_gpu"`
	TotalWPerGPU  float64 `json:"total_w_per_gpu"`
}

// ClassFailures is the expected failures of one component class.
type ClassFailures struct {
	Class      faults.Class `json:"class"`
	Components int          `json:"components"`
	MTBFHours  float64      `json:"mtbf_hours"`
	PerDay     float64      `json:"per_day"`
}

// Reliability counts what can fail in a design and how often it will,
// from the shared table of component rates (package faults,
// docs/failures.md).
type Reliability struct {
	// TransceiversPerGPU is Total.Transceivers / GPUs, at the port speed.
	TransceiversPerGPU float64 `json:"transceivers_per_gpu"`
	// Components counts NIC ports, links and switches.
	Components int             `json:"components"`
	Classes    []ClassFailures `json:"classes"`
	PerDay     float64         `json:"failures_per_day"`
}

// Inventory returns a design's components by failure class: a NIC port
// and a host link per GPU per plane, every switch–switch link and switch.
func (d *Design) Inventory() faults.Inventory {
	t := d.Total
	return faults.Inventory{
		faults.NICPort: t.NICT0Links, faults.HostLink: t.NICT0Links,
		faults.T0T1: t.T0T1Links, faults.T1T2: t.T1T2Links,
		faults.T0: t.T0, faults.T1: t.T1, faults.T2: t.T2,
	}
}

// withEnergy fills in d's power from p (resolved) and its reliability
// from the default rate table.
func withEnergy(d Design, p Params) Design {
	w := Power{
		SwitchW:      p.SwitchW,
		TransceiverW: p.OpticW * float64(d.PortGbps) / 800,
		NICPortW:     p.NICW / float64(d.Planes),
	}
	w.SwitchesKW = float64(d.Total.Switches) * w.SwitchW / 1000
	w.OpticsKW = float64(d.Total.Transceivers) * w.TransceiverW / 1000
	w.FabricKW = w.SwitchesKW + w.OpticsKW
	w.NICsKW = float64(d.GPUs) * p.NICW / 1000
	w.TotalKW = w.FabricKW + w.NICsKW
	w.FabricWPerGPU = 1000 * w.FabricKW / float64(d.GPUs)
	w.TotalWPerGPU = 1000 * w.TotalKW / float64(d.GPUs)
	d.Power = w

	table, inv := faults.Defaults(), d.Inventory()
	for c, r := range p.Rates {
		table[c] = r
	}
	perDay := table.PerDay(inv)
	r := Reliability{TransceiversPerGPU: float64(d.Total.Transceivers) / float64(d.GPUs), Components: inv.Total()}
	for _, c := range faults.Classes {
		if inv[c] == 0 {
			continue
		}
		r.Classes = append(r.Classes, ClassFailures{Class: c, Components: inv[c],
			MTBFHours: float64(table[c].MTBF) / float64(time.Hour), PerDay: perDay[c]})
		r.PerDay += perDay[c]
	}
	d.Reliability = r
	return d
}

// resolvePower checks p's power figures and fills in the defaults.
func (p Params) resolvePower() (Params, error) {
	for _, f := range []struct {
		field string
		v     float64
	}{{"switch_w", p.SwitchW}, {"optic_w", p.OpticW}, {"nic_w", p.NICW}} {
		if f.v < 0 || f.v != f.v {
			return p, paramErr(f.field, "power must be 0 or more watts, got %v", f.v)
		}
	}
	if p.SwitchW == 0 {
		p.SwitchW = DefaultSwitchW * float64(p.SwitchGbps) / defaultSwitchGbps
	}
	if p.OpticW == 0 {
		p.OpticW = DefaultOpticW
	}
	if p.NICW == 0 {
		p.NICW = DefaultNICW
	}
	return p, nil
}

// FloatRatio compares one real-valued quantity of the two-tier design
// with the three-tier one.
type FloatRatio struct {
	TwoTier   float64 `json:"two_tier"`
	ThreeTier float64 `json:"three_tier"`
	Value     float64 `json:"ratio"` // TwoTier / ThreeTier
	Text      string  `json:"text"`  // "64.1%"
}

func newFloatRatio(a, b float64) *FloatRatio {
	r := &FloatRatio{TwoTier: a, ThreeTier: b}
	if b != 0 {
		r.Value = a / b
		r.Text = fmt.Sprintf("%.1f%%", 100*r.Value)
	}
	return r
}
