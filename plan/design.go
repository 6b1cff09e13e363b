package plan

import (
	"errors"
	"fmt"
	"strings"
)

// Tally counts the switches, links and optics of one plane or of the whole
// fabric. Links are cables: a link between two switches, or between a NIC
// port and its T0, counts once. All links of a plane run at the plane's port
// speed.
type Tally struct {
	T0       int `json:"t0"`
	T1       int `json:"t1"`
	T2       int `json:"t2"` // zero in a two-tier design
	Switches int `json:"switches"`

	NICT0Links  int `json:"nic_t0_links"` // one per GPU per plane
	T0T1Links   int `json:"t0_t1_links"`
	T1T2Links   int `json:"t1_t2_links"`  // zero in a two-tier design
	SwitchLinks int `json:"switch_links"` // T0–T1 + T1–T2

	// Transceivers counts optics at the port speed: two per link (one at
	// each end), on every link including NIC–T0.
	Transceivers int `json:"transceivers"`
}

func (t Tally) times(k int) Tally {
	return Tally{
		T0: t.T0 * k, T1: t.T1 * k, T2: t.T2 * k, Switches: t.Switches * k,
		NICT0Links: t.NICT0Links * k, T0T1Links: t.T0T1Links * k, T1T2Links: t.T1T2Links * k,
		SwitchLinks: t.SwitchLinks * k, Transceivers: t.Transceivers * k,
	}
}

// LinkFailure is what one failed link of one kind costs. Both shares are
// unit fractions 1/OneIn; the Fraction fields hold the same value as a float
// for convenience.
type LinkFailure struct {
	// Link is "NIC-T0", "T0-T1" or "T1-T2".
	Link string `json:"link"`

	// NodeOneIn: the failed link carried 1/NodeOneIn of one node's total
	// NIC bandwidth, for the worst-placed node behind it, when that node's
	// traffic leaves its T0 (for T0–T1) or its pod (for T1–T2) and is
	// sprayed evenly over every plane and path, as MRC does. That share is
	// what must move to the remaining paths.
	NodeOneIn    int     `json:"node_one_in"`
	NodeFraction float64 `json:"node_fraction"`

	// UplinkOf is the lower end of the link: "NIC", "T0" or "T1".
	// UplinkOneIn: the failed link is 1/UplinkOneIn of that device's
	// uplink capacity (for a NIC, its Planes ports).
	UplinkOf       string  `json:"uplink_of"`
	UplinkOneIn    int     `json:"uplink_one_in"`
	UplinkFraction float64 `json:"uplink_fraction"`

	// NoTraffic is set when links of this kind carry no traffic at this
	// size (the T1–T2 links of a three-tier design with a single pod):
	// losing one costs nothing, and the shares above are zero.
	NoTraffic bool `json:"no_traffic"`
}

func linkFailure(link, uplinkOf string, nodeOneIn, uplinkOneIn int) LinkFailure {
	return LinkFailure{
		Link:         link,
		NodeOneIn:    nodeOneIn,
		NodeFraction: 1 / float64(nodeOneIn),
		UplinkOf:     uplinkOf, UplinkOneIn: uplinkOneIn,
		UplinkFraction: 1 / float64(uplinkOneIn),
	}
}

// PartialT0 describes a last T0 that is only partly filled, because GPUs is
// not a multiple of GPUsPerT0.
type PartialT0 struct {
	// GPUsOnLastT0 is how many down ports of the last T0 of each plane are
	// used, between 1 and GPUsPerT0-1.
	GPUsOnLastT0 int `json:"gpus_on_last_t0"`
	// FullBelow and FullAbove are the nearest sizes that fill every T0:
	// the multiples of GPUsPerT0 around GPUs (GPUs is above one switch's
	// radix, so FullBelow is at least 2·GPUsPerT0). FullAbove never
	// exceeds the design's maximum.
	FullBelow int `json:"full_size_below"`
	FullAbove int `json:"full_size_above"`
}

// Design is a planned fabric: P identical planes, each a full-bisection Clos
// of Tiers tiers serving every GPU. A cluster small enough for one switch
// per plane (GPUs ≤ Radix) is planned as that single switch, whatever
// tiers were asked for: Tiers is then 1, the switch is counted as the T0
// and uses its ports all down (GPUsPerT0 = Radix), and a note says so.
type Design struct {
	Name       string `json:"name"` // e.g. "two-tier, 8 planes"
	Tiers      int    `json:"tiers"`
	Planes     int    `json:"planes"`
	GPUs       int    `json:"gpus"`
	NICGbps    int    `json:"nic_gbps"`
	PortGbps   int    `json:"port_gbps"`
	SwitchGbps int    `json:"switch_gbps"`
	Radix      int    `json:"radix"`

	// GPUsPerT0 is Radix/2: the GPUs one T0 serves, all one switch hop
	// apart (Radix for a single switch).
	GPUsPerT0 int `json:"gpus_per_t0"`
	// Pods is the number of pods per plane in a three-tier design: groups
	// of up to Radix/2 T0s and as many T1s, serving up to (Radix/2)² GPUs.
	// Zero for two tiers.
	Pods int `json:"pods,omitempty"`

	PerPlane Tally `json:"per_plane"`
	Total    Tally `json:"total"` // PerPlane × Planes

	// OpticsNICEquiv is Total.Transceivers in units of the NIC speed:
	// Total.Transceivers × PortGbps / NICGbps.
	OpticsNICEquiv int `json:"optics_nic_equiv"`

	// LongestPathSwitches is the number of switches on the longest path
	// between two GPUs: 2·Tiers − 1 (T0–T1–T0, T0–T1–T2–T1–T0).
	LongestPathSwitches int `json:"longest_path_switches"`

	// The largest GPU counts switches of this Radix reach in two and in
	// three tiers (see MaxGPUs).
	MaxGPUsTwoTier   int `json:"max_gpus_two_tier"`
	MaxGPUsThreeTier int `json:"max_gpus_three_tier"`

	// Failures holds one entry per link kind, from the NIC up.
	Failures []LinkFailure `json:"failures"`

	// Partial is set when the last T0 of each plane is partly filled.
	Partial *PartialT0 `json:"partial_t0,omitempty"`

	// Power is the design's power draw; Reliability its components and
	// expected failures per day.
	Power       Power       `json:"power"`
	Reliability Reliability `json:"reliability"`

	// Notes are human-readable remarks about this size: a partial T0, or
	// tiers that carry no traffic yet.
	Notes []string `json:"notes,omitempty"`
}

// TwoTier plans p as a P-plane two-tier Clos, or as one switch per
// plane when GPUs ≤ R. Per plane: ⌈GPUs/(R/2)⌉ T0s,
// each R/2 down and R/2 up, and ⌈T0·(R/2)/R⌉ T1s with all R ports down. It
// fits at most R²/2 GPUs. Errors are *ParamError or *SizeError.
func TwoTier(p Params) (Design, error) { return Build(p, 2) }

// ThreeTier plans p as a P-plane three-tier Clos, or as one switch per
// plane when GPUs ≤ R. Per plane: ⌈GPUs/(R/2)⌉
// T0s and as many T1s (each R/2 down, R/2 up), grouped in pods of R/2 T0s;
// ⌈T1·(R/2)/R⌉ T2s with all R ports down. It fits at most R³/4 GPUs. The
// single-plane three-tier baseline is ThreeTier with Planes = 1. Errors are
// *ParamError or *SizeError.
func ThreeTier(p Params) (Design, error) { return Build(p, 3) }

// Build plans p with the given number of tiers, 2 or 3; GPUs that fit
// on one switch per plane get that single switch (see Design).
func Build(p Params, tiers int) (Design, error) {
	if tiers != 2 && tiers != 3 {
		return Design{}, fmt.Errorf("tiers must be 2 or 3, got %d", tiers)
	}
	p, err := p.Resolve()
	if err != nil {
		return Design{}, err
	}
	name := designName(tiers, p.Planes)
	if max := MaxGPUs(tiers, p.Radix); p.GPUs > max {
		return Design{}, &SizeError{GPUs: p.GPUs, Limits: []Limit{{
			Design: name, Radix: p.Radix, MaxGPUs: max,
		}}}
	}

	if p.GPUs <= p.Radix {
		return withEnergy(singleSwitch(p, tiers), p), nil
	}
	r, h, n := p.Radix, p.Radix/2, p.GPUs
	var pl Tally
	pl.T0 = ceilDiv(n, h)
	pl.NICT0Links = n
	pl.T0T1Links = pl.T0 * h // every T0 fully uplinked
	if tiers == 2 {
		pl.T1 = ceilDiv(pl.T0T1Links, r)
	} else {
		pl.T1 = ceilDiv(pl.T0T1Links, h) // = T0: a T1 has h ports down
		pl.T1T2Links = pl.T1 * h
		pl.T2 = ceilDiv(pl.T1T2Links, r)
	}
	pl.Switches = pl.T0 + pl.T1 + pl.T2
	pl.SwitchLinks = pl.T0T1Links + pl.T1T2Links
	pl.Transceivers = 2 * (pl.NICT0Links + pl.SwitchLinks)
	total := pl.times(p.Planes)

	d := Design{
		Name: name, Tiers: tiers, Planes: p.Planes, GPUs: n,
		NICGbps: p.NICGbps, PortGbps: p.PortGbps(), SwitchGbps: p.SwitchGbps, Radix: r,
		GPUsPerT0: h,
		PerPlane:  pl, Total: total,
		// Transceivers × port / NIC, exactly: NIC = Planes × port.
		OpticsNICEquiv:      total.Transceivers / p.Planes,
		LongestPathSwitches: 2*tiers - 1,
		MaxGPUsTwoTier:      MaxGPUs(2, r),
		MaxGPUsThreeTier:    MaxGPUs(3, r),
	}
	d.Failures = []LinkFailure{
		linkFailure("NIC-T0", "NIC", p.Planes, p.Planes),
		linkFailure("T0-T1", "T0", h*p.Planes, h),
	}
	if tiers == 3 {
		d.Pods = ceilDiv(pl.T0, h)
		smallestPod := pl.T1 - (d.Pods-1)*h // T1s in the last pod
		f := linkFailure("T1-T2", "T1", smallestPod*h*p.Planes, h)
		if d.Pods == 1 {
			f = LinkFailure{Link: "T1-T2", UplinkOf: "T1", NoTraffic: true}
		}
		d.Failures = append(d.Failures, f)
	}

	perPlane := " of each plane"
	if p.Planes == 1 {
		perPlane = ""
	}
	if k := n % h; k != 0 {
		d.Partial = &PartialT0{GPUsOnLastT0: k, FullBelow: n - k, FullAbove: n - k + h}
		near := "nearest full size " + count(d.Partial.FullAbove)
		if d.Partial.FullBelow > 0 {
			near = "nearest full sizes " + count(d.Partial.FullBelow) + " and " + count(d.Partial.FullAbove)
		}
		d.Notes = append(d.Notes, fmt.Sprintf(
			"%s GPUs is not a multiple of %d GPUs per T0: the last T0%s uses %d of its %d down ports (switch counts rounded up); %s",
			count(n), h, perPlane, k, h, near))
	}
	if tiers == 3 && d.Pods == 1 {
		d.Notes = append(d.Notes, fmt.Sprintf(
			"all %s GPUs fit in one pod%s: the T2 tier is counted so the fabric can grow, but carries no traffic at this size (a lost T1-T2 link costs nothing); --tiers 2 plans the fabric without it",
			count(n), perPlane))
	}
	return withEnergy(d, p), nil
}

// singleSwitch plans GPUs ≤ R as one switch per plane with every port
// down: the smallest fabric, in which every GPU is one switch from every
// other. tiers is the design that was asked for, named in the note.
func singleSwitch(p Params, tiers int) Design {
	r, n := p.Radix, p.GPUs
	pl := Tally{T0: 1, Switches: 1, NICT0Links: n, Transceivers: 2 * n}
	total := pl.times(p.Planes)
	perPlane := " per plane"
	if p.Planes == 1 {
		perPlane = ""
	}
	return Design{
		Name: designName(1, p.Planes), Tiers: 1, Planes: p.Planes, GPUs: n,
		NICGbps: p.NICGbps, PortGbps: p.PortGbps(), SwitchGbps: p.SwitchGbps, Radix: r,
		GPUsPerT0: r,
		PerPlane:  pl, Total: total,
		OpticsNICEquiv:      total.Transceivers / p.Planes,
		LongestPathSwitches: 1,
		MaxGPUsTwoTier:      MaxGPUs(2, r),
		MaxGPUsThreeTier:    MaxGPUs(3, r),
		Failures:            []LinkFailure{linkFailure("NIC-T0", "NIC", p.Planes, p.Planes)},
		Notes: []string{fmt.Sprintf(
			"%s fit%s on one %d-port switch%s: planned as that switch alone (%s of its ports used) rather than a %s Clos, which at this size would join %s to the T1 tier by bundles of up to %d parallel links; the %s design starts above %s GPUs",
			gpus(n), verbS(n), r, perPlane, count(n), tierWords(tiers), t0s(ceilDiv(n, r/2)), r/2, tierWords(tiers), count(r))},
	}
}

// gpus says "1 GPU", "8 GPUs"; verbS is the verb's "s" that goes with
// n; t0s says "its T0", "its 2 T0s".
func gpus(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return count(n) + " GPUs"
}

func verbS(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func t0s(n int) string {
	if n == 1 {
		return "its T0"
	}
	return fmt.Sprintf("its %d T0s", n)
}

func tierWords(tiers int) string {
	if tiers == 3 {
		return "three-tier"
	}
	return "two-tier"
}

func designName(tiers, planes int) string {
	t := tierWords(tiers)
	if tiers == 1 {
		t = "single switch"
	}
	if planes == 1 {
		return t + ", 1 plane"
	}
	return fmt.Sprintf("%s, %d planes", t, planes)
}

// switches says "1 switch", "3 switches".
func switches(n int) string {
	if n == 1 {
		return "1 switch"
	}
	return count(n) + " switches"
}

// Limit says why a design cannot serve the requested GPUs.
type Limit struct {
	Design string `json:"design"`
	// Radix and MaxGPUs are set when the design is possible but too
	// small; MaxGPUs is then the nearest size that fits.
	Radix   int    `json:"radix,omitempty"`
	MaxGPUs int    `json:"max_gpus,omitempty"`
	Reason  string `json:"reason"`
}

// SizeError reports that GPUs fit none of the designs tried. Each Limit
// names one design and its maximum.
type SizeError struct {
	GPUs   int
	Limits []Limit
}

// Nearest is the largest maximum among the designs tried: the size nearest
// to GPUs that fits one of them.
func (e *SizeError) Nearest() int {
	m := 0
	for _, l := range e.Limits {
		m = max(m, l.MaxGPUs)
	}
	return m
}

func (e *SizeError) Error() string {
	parts := make([]string, len(e.Limits))
	for i, l := range e.Limits {
		parts[i] = fmt.Sprintf("%s of radix %d (max %s)", l.Design, l.Radix, count(l.MaxGPUs))
	}
	verb := "do not fit "
	if len(parts) > 1 {
		verb = "fit neither "
	}
	return fmt.Sprintf("%s GPUs %s%s; nearest size that fits: %s",
		count(e.GPUs), verb, strings.Join(parts, " nor "), count(e.Nearest()))
}

// Ratio compares one quantity of the two-tier design with the three-tier one.
type Ratio struct {
	TwoTier   int     `json:"two_tier"`
	ThreeTier int     `json:"three_tier"`
	Value     float64 `json:"ratio"` // TwoTier / ThreeTier
	// Text is the ratio in lowest terms ("3/5") when the denominator is
	// at most 12, else a percentage ("61.2%").
	Text string `json:"text"`
}

func newRatio(a, b int) Ratio {
	r := Ratio{TwoTier: a, ThreeTier: b, Value: float64(a) / float64(b)}
	g := gcd(a, b)
	if b/g <= 12 {
		r.Text = fmt.Sprintf("%d/%d", a/g, b/g)
	} else {
		r.Text = fmt.Sprintf("%.1f%%", 100*r.Value)
	}
	return r
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Comparison sets a P-plane two-tier design beside the single-plane
// three-tier design for the same GPUs, built from the same switch.
type Comparison struct {
	GPUs int `json:"gpus"`
	// TwoTier and ThreeTier are nil when that design cannot serve GPUs;
	// Unfit then says why.
	TwoTier   *Design `json:"two_tier"`
	ThreeTier *Design `json:"three_tier"`
	Unfit     []Limit `json:"unfit,omitempty"`
	// Switches and Optics (in NIC-speed equivalents) are set when both
	// designs fit.
	Switches *Ratio `json:"switches,omitempty"`
	Optics   *Ratio `json:"optics,omitempty"`
	// FabricPower (kW), TransceiversPerGPU and FailuresPerDay likewise.
	FabricPower        *FloatRatio `json:"fabric_power,omitempty"`
	TransceiversPerGPU *FloatRatio `json:"transceivers_per_gpu,omitempty"`
	FailuresPerDay     *FloatRatio `json:"failures_per_day,omitempty"`
	// Verdict sums the comparison up in one line.
	Verdict string `json:"verdict"`
}

// Compare plans p as a two-tier design of p.Planes planes and, beside it,
// the single-plane three-tier baseline for the same GPUs: the same NIC and
// the same switch capacity, with ports at the full NIC speed (radix
// SwitchGbps/NICGbps). A design that cannot serve the GPUs is left nil and
// explained in Unfit. The error is a *ParamError if p is invalid and a
// *SizeError if neither design fits.
func Compare(p Params) (Comparison, error) {
	p, err := p.Resolve()
	if err != nil {
		return Comparison{}, err
	}
	c := Comparison{GPUs: p.GPUs}
	var sizeErrs []Limit
	note := func(name string, err error) {
		var se *SizeError
		if errors.As(err, &se) {
			for _, l := range se.Limits {
				l.Reason = fmt.Sprintf("%s GPUs exceed its maximum of %s at radix %d", count(p.GPUs), count(l.MaxGPUs), l.Radix)
				c.Unfit = append(c.Unfit, l)
				sizeErrs = append(sizeErrs, l)
			}
			return
		}
		c.Unfit = append(c.Unfit, Limit{Design: name, Reason: fmt.Sprintf("%dG switch in %dG ports: %v", p.SwitchGbps, p.NICGbps, err)})
	}

	if d, err := TwoTier(p); err == nil {
		c.TwoTier = &d
	} else {
		note(designName(2, p.Planes), err)
	}
	base := Params{GPUs: p.GPUs, Planes: 1, NICGbps: p.NICGbps, SwitchGbps: p.SwitchGbps, SwitchW: p.SwitchW, OpticW: p.OpticW, NICW: p.NICW}
	if d, err := ThreeTier(base); err == nil {
		c.ThreeTier = &d
	} else {
		note(designName(3, 1), err)
	}

	two, three := c.TwoTier, c.ThreeTier
	if two != nil && three != nil {
		c.FabricPower = newFloatRatio(two.Power.FabricKW, three.Power.FabricKW)
		c.TransceiversPerGPU = newFloatRatio(two.Reliability.TransceiversPerGPU, three.Reliability.TransceiversPerGPU)
		c.FailuresPerDay = newFloatRatio(two.Reliability.PerDay, three.Reliability.PerDay)
	}
	switch {
	case two != nil && three != nil && two.Tiers == 1 && three.Tiers == 1:
		s := newRatio(two.Total.Switches, three.Total.Switches)
		o := newRatio(two.OpticsNICEquiv, three.OpticsNICEquiv)
		c.Switches, c.Optics = &s, &o
		c.Verdict = fmt.Sprintf("%s GPUs fit on one switch per plane in both designs: %s of %d x %dG ports vs %s of %d x %dG ports, no Clos to compare at this size",
			count(p.GPUs), switches(two.Total.Switches), two.Radix, two.PortGbps, switches(three.Total.Switches), three.Radix, three.PortGbps)
	case two != nil && three != nil:
		s := newRatio(two.Total.Switches, three.Total.Switches)
		o := newRatio(two.OpticsNICEquiv, three.OpticsNICEquiv)
		c.Switches, c.Optics = &s, &o
		c.Verdict = fmt.Sprintf("%s: %s of the switches and %s of the optics of %s; longest path %s vs %d",
			two.Name, s.Text, o.Text, three.Name, switches(two.LongestPathSwitches), three.LongestPathSwitches)
	case two != nil || three != nil:
		fit := two
		if fit == nil {
			fit = three
		}
		u := c.Unfit[0]
		c.Verdict = fmt.Sprintf("%s: fits %s GPUs in %s switches; %s", fit.Name, count(p.GPUs), count(fit.Total.Switches), u.Design)
		if u.MaxGPUs > 0 {
			c.Verdict += " tops out at " + count(u.MaxGPUs) + " GPUs"
		} else {
			c.Verdict += " is not possible: " + u.Reason
		}
	default:
		if len(sizeErrs) == 0 {
			// Not reachable: valid p always gives a valid two-tier design.
			return Comparison{}, errors.New(c.Unfit[0].Reason)
		}
		return Comparison{}, &SizeError{GPUs: p.GPUs, Limits: sizeErrs}
	}
	return c, nil
}
