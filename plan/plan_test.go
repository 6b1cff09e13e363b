package plan

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// std is the deployed MRC cluster: 800G NICs and 51.2T switches.
func std(gpus, planes int) Params {
	return Params{GPUs: gpus, Planes: planes, NICGbps: 800, SwitchGbps: 51200}
}

func mustBuild(t *testing.T, p Params, tiers int) Design {
	t.Helper()
	d, err := Build(p, tiers)
	if err != nil {
		t.Fatalf("Build(%+v, %d): %v", p, tiers, err)
	}
	return d
}

func failure(t *testing.T, d Design, link string) LinkFailure {
	t.Helper()
	for _, f := range d.Failures {
		if f.Link == link {
			return f
		}
	}
	t.Fatalf("%s: no %s failure entry in %+v", d.Name, link, d.Failures)
	return LinkFailure{}
}

// The figures published for MRC's fabrics (paper §2, digest §2).
func TestPublishedTwoTier131072(t *testing.T) {
	d := mustBuild(t, std(131072, 8), 2)
	if d.Radix != 512 || d.PortGbps != 100 || d.GPUsPerT0 != 256 {
		t.Errorf("radix %d port %dG per-T0 %d, want 512, 100G, 256", d.Radix, d.PortGbps, d.GPUsPerT0)
	}
	if d.PerPlane.T0 != 512 || d.PerPlane.T1 != 256 {
		t.Errorf("per plane T0 %d T1 %d, want 512 and 256", d.PerPlane.T0, d.PerPlane.T1)
	}
	if d.Total.Switches != 6144 {
		t.Errorf("switches %d, want 6144", d.Total.Switches)
	}
	if d.MaxGPUsTwoTier != 131072 {
		t.Errorf("two-tier max %d, want 131072", d.MaxGPUsTwoTier)
	}
	if d.LongestPathSwitches != 3 {
		t.Errorf("longest path %d, want 3", d.LongestPathSwitches)
	}
	if f := failure(t, d, "T0-T1"); f.UplinkOneIn != 256 {
		t.Errorf("T0-T1 failure costs 1/%d of a T0's uplinks, want 1/256", f.UplinkOneIn)
	}
	if f := failure(t, d, "NIC-T0"); f.NodeOneIn != 8 || f.NodeFraction != 0.125 {
		t.Errorf("NIC-T0 failure costs 1/%d (%v) of a node, want 1/8", f.NodeOneIn, f.NodeFraction)
	}
	if d.Partial != nil || len(d.Notes) != 0 {
		t.Errorf("a full size has partial %+v, notes %q", d.Partial, d.Notes)
	}
}

func TestPublishedThreeTier65536(t *testing.T) {
	d := mustBuild(t, std(65536, 1), 3)
	if d.Radix != 64 || d.GPUsPerT0 != 32 {
		t.Errorf("radix %d, per-T0 %d, want 64 and 32", d.Radix, d.GPUsPerT0)
	}
	if d.Total.T0 != 2048 || d.Total.T1 != 2048 || d.Total.T2 != 1024 || d.Total.Switches != 5120 {
		t.Errorf("T0 %d T1 %d T2 %d total %d, want 2048, 2048, 1024, 5120",
			d.Total.T0, d.Total.T1, d.Total.T2, d.Total.Switches)
	}
	if d.Pods != 64 {
		t.Errorf("pods %d, want 64", d.Pods)
	}
	if d.MaxGPUsThreeTier != 65536 || d.MaxGPUsTwoTier != 2048 {
		t.Errorf("max %d in 3 tiers, %d in 2, want 65536 and 2048", d.MaxGPUsThreeTier, d.MaxGPUsTwoTier)
	}
	if d.LongestPathSwitches != 5 {
		t.Errorf("longest path %d, want 5", d.LongestPathSwitches)
	}
	if f := failure(t, d, "T0-T1"); f.UplinkOneIn != 32 || f.NodeOneIn != 32 {
		t.Errorf("T0-T1 failure: 1/%d of uplinks, 1/%d of a node, want 1/32 for both", f.UplinkOneIn, f.NodeOneIn)
	}
	if f := failure(t, d, "NIC-T0"); f.NodeFraction != 1 {
		t.Errorf("NIC-T0 failure costs %v of a single-plane node, want all of it", f.NodeFraction)
	}
	// A full pod spreads a node over 32 T1s × 32 uplinks.
	if f := failure(t, d, "T1-T2"); f.NodeOneIn != 1024 || f.UplinkOneIn != 32 {
		t.Errorf("T1-T2 failure: 1/%d of a node, 1/%d of uplinks, want 1/1024 and 1/32", f.NodeOneIn, f.UplinkOneIn)
	}
	// 1,056 GPUs: a full pod and a pod of one T0 and one T1, whose nodes
	// send all cross-pod traffic through that T1's 32 uplinks.
	if f := failure(t, mustBuild(t, std(1056, 1), 3), "T1-T2"); f.NodeOneIn != 32 {
		t.Errorf("T1-T2 failure in a one-T1 pod costs 1/%d of a node, want 1/32", f.NodeOneIn)
	}
	// A pod is 32 T0s = 1,024 NICs.
	if d := mustBuild(t, std(1024, 1), 3); d.Pods != 1 {
		t.Errorf("1,024 GPUs take %d pods, want 1", d.Pods)
	}
	if d := mustBuild(t, std(1025, 1), 3); d.Pods != 2 {
		t.Errorf("1,025 GPUs take %d pods, want 2", d.Pods)
	}
}

func TestPublishedComparison65536(t *testing.T) {
	c, err := Compare(std(65536, 8))
	if err != nil {
		t.Fatal(err)
	}
	if c.TwoTier == nil || c.ThreeTier == nil {
		t.Fatalf("both designs should fit 65,536 GPUs: %+v", c.Unfit)
	}
	if c.TwoTier.Total.Switches != 3072 || c.ThreeTier.Total.Switches != 5120 {
		t.Errorf("switches %d vs %d, want 3072 vs 5120", c.TwoTier.Total.Switches, c.ThreeTier.Total.Switches)
	}
	if c.Switches.Text != "3/5" || c.Switches.Value != 0.6 {
		t.Errorf("switch ratio %+v, want 3/5", *c.Switches)
	}
	if c.Optics.Text != "2/3" {
		t.Errorf("optics ratio %+v, want 2/3", *c.Optics)
	}
	// Optics: every link has a transceiver at each end, NIC–T0 included.
	// Two-tier: 8 planes × (65,536 + 65,536) links × 2 at 100G.
	// Three-tier: 3 × 65,536 links × 2 at 800G.
	if got := c.TwoTier.Total.Transceivers; got != 2097152 {
		t.Errorf("two-tier transceivers %d, want 2,097,152", got)
	}
	if got := c.TwoTier.OpticsNICEquiv; got != 262144 {
		t.Errorf("two-tier 800G equivalents %d, want 262,144", got)
	}
	if got := c.ThreeTier.OpticsNICEquiv; got != 393216 {
		t.Errorf("three-tier 800G equivalents %d, want 393,216", got)
	}
	want := "two-tier, 8 planes: 3/5 of the switches and 2/3 of the optics of three-tier, 1 plane; longest path 3 switches vs 5"
	if c.Verdict != want {
		t.Errorf("verdict\n got %q\nwant %q", c.Verdict, want)
	}
}

func TestPublishedFailureCosts(t *testing.T) {
	for _, tc := range []struct {
		planes, radix, nicOneIn, t0UplinkOneIn int
	}{
		{8, 512, 8, 256}, // 12.5% of the NIC; 0.4% of a T0's uplinks
		{4, 256, 4, 128}, // 25%
		{1, 64, 1, 32},   // 100%; 3.1%
	} {
		d := mustBuild(t, std(1024, tc.planes), 2)
		if d.Radix != tc.radix {
			t.Errorf("%d planes: radix %d, want %d", tc.planes, d.Radix, tc.radix)
		}
		if f := failure(t, d, "NIC-T0"); f.NodeOneIn != tc.nicOneIn || f.UplinkOneIn != tc.nicOneIn {
			t.Errorf("%d planes: NIC-T0 costs 1/%d of the node, 1/%d of the NIC, want 1/%d",
				tc.planes, f.NodeOneIn, f.UplinkOneIn, tc.nicOneIn)
		}
		if f := failure(t, d, "T0-T1"); f.UplinkOneIn != tc.t0UplinkOneIn || f.NodeOneIn != tc.t0UplinkOneIn*tc.planes {
			t.Errorf("%d planes: T0-T1 costs 1/%d of uplinks and 1/%d of a node, want 1/%d and 1/%d",
				tc.planes, f.UplinkOneIn, f.NodeOneIn, tc.t0UplinkOneIn, tc.t0UplinkOneIn*tc.planes)
		}
	}
	// The single-plane figure the paper rounds to 3%.
	d := mustBuild(t, std(65536, 1), 3)
	if got := failure(t, d, "T0-T1").UplinkFraction; got != 1.0/32 {
		t.Errorf("single-plane T0-T1 uplink share %v, want 1/32", got)
	}
}

func TestTooBig(t *testing.T) {
	for _, tc := range []struct {
		p     Params
		tiers int
		max   int
	}{
		{std(131073, 8), 2, 131072},
		{std(65537, 1), 3, 65536},
		{std(2049, 1), 2, 2048},
		{std(1<<40, 8), 3, 33554432},
	} {
		_, err := Build(tc.p, tc.tiers)
		var se *SizeError
		if !errors.As(err, &se) {
			t.Errorf("%d GPUs in %d tiers, %d planes: err %v, want a SizeError", tc.p.GPUs, tc.tiers, tc.p.Planes, err)
			continue
		}
		if se.Nearest() != tc.max || !strings.Contains(se.Error(), "nearest size that fits: "+count(tc.max)) {
			t.Errorf("%d GPUs: %q, want nearest %d", tc.p.GPUs, se, tc.max)
		}
		// One fewer GPU than the error's nearest size must fit.
		p := tc.p
		p.GPUs = se.Nearest()
		if _, err := Build(p, tc.tiers); err != nil {
			t.Errorf("the nearest size %d does not fit: %v", p.GPUs, err)
		}
	}
}

func TestCompareOneFits(t *testing.T) {
	c, err := Compare(std(131072, 8))
	if err != nil {
		t.Fatal(err)
	}
	if c.TwoTier == nil || c.ThreeTier != nil || c.Switches != nil {
		t.Fatalf("131,072 GPUs: two-tier %v, three-tier %v, switches %v; want only two-tier", c.TwoTier != nil, c.ThreeTier != nil, c.Switches)
	}
	if len(c.Unfit) != 1 || c.Unfit[0].MaxGPUs != 65536 || c.Unfit[0].Design != "three-tier, 1 plane" {
		t.Errorf("unfit %+v, want three-tier, 1 plane with max 65,536", c.Unfit)
	}
	if !strings.Contains(c.Verdict, "tops out at 65,536 GPUs") {
		t.Errorf("verdict %q does not name the three-tier maximum", c.Verdict)
	}

	// Single plane, 3,000 GPUs: only three tiers fit.
	c, err = Compare(std(3000, 1))
	if err != nil {
		t.Fatal(err)
	}
	if c.TwoTier != nil || c.ThreeTier == nil || c.Unfit[0].MaxGPUs != 2048 {
		t.Errorf("3,000 GPUs, 1 plane: want only three-tier, two-tier max 2,048; got %+v", c.Unfit)
	}

	// Neither fits: the error names both maxima and the larger as nearest.
	_, err = Compare(std(200000, 8))
	var se *SizeError
	if !errors.As(err, &se) || len(se.Limits) != 2 || se.Nearest() != 131072 {
		t.Fatalf("200,000 GPUs: %v, want a SizeError naming two designs, nearest 131,072", err)
	}
	if msg := se.Error(); !strings.Contains(msg, "max 131,072") || !strings.Contains(msg, "max 65,536") {
		t.Errorf("error %q should name both maxima", msg)
	}

	// The switch cannot be cut into NIC-speed ports: the baseline is not
	// possible, the two-tier design still is.
	c, err = Compare(Params{GPUs: 1000, Planes: 8, NICGbps: 800, SwitchGbps: 51200 + 400})
	if err != nil {
		t.Fatal(err)
	}
	if c.TwoTier == nil || c.ThreeTier != nil || !strings.Contains(c.Verdict, "is not possible") {
		t.Errorf("baseline should be impossible: %q", c.Verdict)
	}
}

func TestParamErrors(t *testing.T) {
	for _, tc := range []struct {
		p     Params
		field string
	}{
		{Params{GPUs: 0, Planes: 8, NICGbps: 800, SwitchGbps: 51200}, "gpus"},
		{Params{GPUs: -1, Planes: 8, NICGbps: 800, SwitchGbps: 51200}, "gpus"},
		{Params{GPUs: 1, Planes: 0, NICGbps: 800, SwitchGbps: 51200}, "planes"},
		{Params{GPUs: 1, Planes: 3, NICGbps: 800, SwitchGbps: 51200}, "planes"},
		{Params{GPUs: 1, Planes: 1000, NICGbps: 800, SwitchGbps: 51200}, "planes"},
		{Params{GPUs: 1, Planes: MaxPlanes + 1, NICGbps: 1 << 20, SwitchGbps: 51200}, "planes"},
		{Params{GPUs: 1, Planes: 1, NICGbps: 0, SwitchGbps: 51200}, "nic_gbps"},
		{Params{GPUs: 1, Planes: 1, NICGbps: MaxNICGbps + 1, SwitchGbps: 51200}, "nic_gbps"},
		{Params{GPUs: 1, Planes: 1, NICGbps: 800, SwitchGbps: -5}, "switch_gbps"},
		{Params{GPUs: 1, Planes: 1, NICGbps: 800}, "switch_gbps"},
		{Params{GPUs: 1, Planes: 2, NICGbps: 600, SwitchGbps: 51200}, "switch_gbps"}, // 300G ports
		{Params{GPUs: 1, Planes: 1, NICGbps: 800, SwitchGbps: 800}, "radix"},         // radix 1
		{Params{GPUs: 1, Planes: 1, NICGbps: 100, SwitchGbps: 300}, "radix"},         // radix 3
		{Params{GPUs: 1, Planes: 1, NICGbps: 1, SwitchGbps: 1 << 40}, "switch_gbps"},
		{Params{GPUs: 1, Planes: 1, NICGbps: 800, Radix: -2}, "radix"},
		{Params{GPUs: 1, Planes: 1, NICGbps: 800, Radix: 7}, "radix"},
		{Params{GPUs: 1, Planes: 1, NICGbps: 800, Radix: MaxRadix + 2}, "radix"},
		{Params{GPUs: 1, Planes: 8, NICGbps: 800, SwitchGbps: 51200, Radix: 256}, "radix"}, // disagree
	} {
		for tiers := 2; tiers <= 3; tiers++ {
			_, err := Build(tc.p, tiers)
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Field != tc.field {
				t.Errorf("Build(%+v, %d): %v, want a ParamError on %s", tc.p, tiers, err, tc.field)
			}
		}
		_, err := Compare(tc.p)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("Compare(%+v): %v, want a ParamError on %s", tc.p, err, tc.field)
		}
	}
	if _, err := Build(std(10, 8), 4); err == nil {
		t.Error("Build with 4 tiers succeeded")
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		in        Params
		radix, sw int
	}{
		{std(1, 8), 512, 51200},
		{std(1, 4), 256, 51200},
		{std(1, 1), 64, 51200},
		{Params{GPUs: 1, Planes: 8, NICGbps: 800, Radix: 256}, 256, 25600},
		{Params{GPUs: 1, Planes: 8, NICGbps: 800, SwitchGbps: 51200, Radix: 512}, 512, 51200},
	} {
		got, err := tc.in.Resolve()
		if err != nil || got.Radix != tc.radix || got.SwitchGbps != tc.sw {
			t.Errorf("Resolve(%+v) = radix %d switch %d, %v; want %d, %d", tc.in, got.Radix, got.SwitchGbps, err, tc.radix, tc.sw)
		}
	}
}

func TestMaxGPUs(t *testing.T) {
	for _, tc := range []struct{ tiers, radix, want int }{
		{1, 64, 64},
		{2, 64, 2048},
		{3, 64, 65536},
		{2, 512, 131072},
		{3, 512, 33554432},
		{2, 2, 2},
		{0, 64, 0},
		{2, 1, 0},
		{40, MaxRadix, int(^uint(0) >> 1)}, // saturates
	} {
		if got := MaxGPUs(tc.tiers, tc.radix); got != tc.want {
			t.Errorf("MaxGPUs(%d, %d) = %d, want %d", tc.tiers, tc.radix, got, tc.want)
		}
	}
}

func TestRatioText(t *testing.T) {
	for _, tc := range []struct {
		a, b int
		want string
	}{
		{3072, 5120, "3/5"},
		{262144, 393216, "2/3"},
		{8, 5, "8/5"},
		{612, 1000, "61.2%"},
	} {
		if got := newRatio(tc.a, tc.b).Text; got != tc.want {
			t.Errorf("newRatio(%d, %d) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestSmallSizes checks that GPUs that fit on one switch per plane get
// that switch, not a Clos whose T1s hang off one T0 by parallel links,
// and that no failure line claims a loss through links that carry no
// traffic.
func TestSmallSizes(t *testing.T) {
	for _, tiers := range []int{2, 3} {
		d := mustBuild(t, std(8, 8), tiers)
		if d.Tiers != 1 || d.Total.Switches != 8 || d.Total.SwitchLinks != 0 || len(d.Failures) != 1 {
			t.Errorf("8 GPUs in %d tiers: %d tiers, %d switches, %d switch links, failures %+v; want one switch per plane",
				tiers, d.Tiers, d.Total.Switches, d.Total.SwitchLinks, d.Failures)
		}
		if bad := checkDesign(d); len(bad) > 0 {
			t.Error(strings.Join(bad, "\n"))
		}
	}
	c, err := Compare(std(8, 8))
	if err != nil {
		t.Fatal(err)
	}
	if c.TwoTier.Total.Switches != 8 || c.ThreeTier.Total.Switches != 1 || !strings.Contains(c.Verdict, "one switch per plane in both designs") {
		t.Errorf("8 GPUs: %d vs %d switches, verdict %q", c.TwoTier.Total.Switches, c.ThreeTier.Total.Switches, c.Verdict)
	}
	// One pod: the T2 tier is idle, and a T1-T2 failure costs nothing.
	d := mustBuild(t, std(1000, 1), 3)
	if f := failure(t, d, "T1-T2"); !f.NoTraffic || f.NodeOneIn != 0 || f.UplinkFraction != 0 {
		t.Errorf("1,000 GPUs in one pod: T1-T2 failure %+v claims a loss", f)
	}
	// Just above one switch: a real two-tier Clos.
	d = mustBuild(t, std(513, 8), 2)
	if d.Tiers != 2 || d.PerPlane.T0 != 3 || d.PerPlane.T1 != 2 {
		t.Errorf("513 GPUs: %d tiers, %d T0 and %d T1 per plane; want 2, 3, 2", d.Tiers, d.PerPlane.T0, d.PerPlane.T1)
	}
}

func TestPartialT0(t *testing.T) {
	d := mustBuild(t, std(65000, 8), 2)
	want := PartialT0{GPUsOnLastT0: 232, FullBelow: 64768, FullAbove: 65024}
	if d.Partial == nil || *d.Partial != want {
		t.Fatalf("partial %+v, want %+v", d.Partial, want)
	}
	if d.PerPlane.T0 != 254 {
		t.Errorf("T0 per plane %d, want 254 (253 full and one partial)", d.PerPlane.T0)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "64,768 and 65,024") {
		t.Errorf("notes %q should name both full sizes", d.Notes)
	}
	// The smallest partial size above one switch has full sizes on both
	// sides.
	d = mustBuild(t, std(600, 8), 2)
	if d.Partial == nil || d.Partial.FullBelow != 512 || d.Partial.FullAbove != 768 || len(d.Notes) != 1 {
		t.Errorf("600 GPUs: partial %+v, notes %q", d.Partial, d.Notes)
	}
	d = mustBuild(t, std(512, 1), 3)
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "one pod") {
		t.Errorf("512 GPUs in three tiers: notes %q, want the one-pod note", d.Notes)
	}
}

// checkDesign checks the invariants every design must satisfy and returns
// the violations.
func checkDesign(d Design) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	r, h, n, pl := d.Radix, d.GPUsPerT0, d.GPUs, d.PerPlane
	if d.Tiers == 1 || n <= r {
		return append(bad, checkSingleSwitch(d)...)
	}

	if h*2 != r || d.PortGbps*d.Planes != d.NICGbps || d.Radix*d.PortGbps != d.SwitchGbps {
		fail("inconsistent speeds: radix %d, h %d, port %d, planes %d, NIC %d, switch %d",
			r, h, d.PortGbps, d.Planes, d.NICGbps, d.SwitchGbps)
	}
	// Every host port has a T0 port, and no T0 is wasted.
	if pl.NICT0Links != n || pl.T0*h < n || (pl.T0-1)*h >= n {
		fail("T0 %d × %d down ports for %d GPUs", pl.T0, h, n)
	}
	// Full bisection at T0: up capacity covers down, equal when T0s are full.
	if pl.T0T1Links != pl.T0*h || pl.T0T1Links < pl.NICT0Links {
		fail("T0 uplinks %d for %d T0s and %d GPUs", pl.T0T1Links, pl.T0, n)
	}
	if (n%h == 0) != (pl.T0T1Links == pl.NICT0Links) {
		fail("T0 up %d vs down %d with %d GPUs per T0", pl.T0T1Links, pl.NICT0Links, h)
	}
	switch d.Tiers {
	case 2:
		// T1s: enough down ports, none wasted.
		if pl.T1*r < pl.T0T1Links || (pl.T1-1)*r >= pl.T0T1Links || pl.T2 != 0 || pl.T1T2Links != 0 {
			fail("two-tier T1 %d × %d ports for %d uplinks (T2 %d)", pl.T1, r, pl.T0T1Links, pl.T2)
		}
		if d.Pods != 0 {
			fail("two-tier design has %d pods", d.Pods)
		}
	case 3:
		// T1s: half down, half up, up == down.
		if pl.T1*h < pl.T0T1Links || (pl.T1-1)*h >= pl.T0T1Links {
			fail("three-tier T1 %d × %d down ports for %d uplinks", pl.T1, h, pl.T0T1Links)
		}
		if pl.T1T2Links != pl.T1*h || pl.T1T2Links != pl.T0T1Links {
			fail("T1 up %d vs down %d", pl.T1T2Links, pl.T0T1Links)
		}
		if pl.T2*r < pl.T1T2Links || (pl.T2-1)*r >= pl.T1T2Links {
			fail("T2 %d × %d ports for %d T1 uplinks", pl.T2, r, pl.T1T2Links)
		}
		if d.Pods*h < pl.T0 || (d.Pods-1)*h >= pl.T0 {
			fail("%d pods of %d T0s for %d T0s", d.Pods, h, pl.T0)
		}
	default:
		fail("tiers %d", d.Tiers)
	}
	if pl.Switches != pl.T0+pl.T1+pl.T2 || pl.SwitchLinks != pl.T0T1Links+pl.T1T2Links {
		fail("sums: %+v", pl)
	}
	if pl.Transceivers != 2*(pl.NICT0Links+pl.T0T1Links+pl.T1T2Links) {
		fail("transceivers %d for %+v", pl.Transceivers, pl)
	}
	if d.Total != pl.times(d.Planes) {
		fail("total %+v is not %d × %+v", d.Total, d.Planes, pl)
	}
	if d.OpticsNICEquiv*d.NICGbps != d.Total.Transceivers*d.PortGbps {
		fail("optics %d NIC-equivalents for %d transceivers at %dG", d.OpticsNICEquiv, d.Total.Transceivers, d.PortGbps)
	}
	if d.LongestPathSwitches != 2*d.Tiers-1 {
		fail("longest path %d for %d tiers", d.LongestPathSwitches, d.Tiers)
	}
	if n > MaxGPUs(d.Tiers, r) || d.MaxGPUsTwoTier != r*r/2 || d.MaxGPUsThreeTier != r*r*r/4 {
		fail("maxima %d, %d for radix %d and %d GPUs", d.MaxGPUsTwoTier, d.MaxGPUsThreeTier, r, n)
	}
	if len(d.Failures) != d.Tiers {
		fail("%d failure kinds for %d tiers", len(d.Failures), d.Tiers)
	}
	for i, f := range d.Failures {
		want := []string{"NIC-T0", "T0-T1", "T1-T2"}[i]
		// T1-T2 links carry no traffic with a single pod, and only then.
		if idle := i == 2 && d.Pods == 1; f.NoTraffic != idle {
			fail("failure %d: %+v with %d pods", i, f, d.Pods)
		} else if idle {
			if f != (LinkFailure{Link: want, UplinkOf: "T1", NoTraffic: true}) {
				fail("idle failure %d claims a loss: %+v", i, f)
			}
			continue
		}
		if f.Link != want || f.NodeOneIn < 1 || f.UplinkOneIn < 1 ||
			f.NodeFraction != 1/float64(f.NodeOneIn) || f.UplinkFraction != 1/float64(f.UplinkOneIn) {
			fail("failure %d: %+v", i, f)
		}
		// A node's share through one link shrinks as links are added.
		if i > 0 && f.NodeOneIn < d.Failures[i-1].NodeOneIn {
			fail("a %s link carries more of a node than a %s link", f.Link, d.Failures[i-1].Link)
		}
	}
	if len(d.Failures) >= 2 {
		if f := d.Failures[0]; f.NodeOneIn != d.Planes || f.UplinkOneIn != d.Planes {
			fail("NIC-T0 failure %+v with %d planes", f, d.Planes)
		}
		if f := d.Failures[1]; f.UplinkOneIn != h || f.NodeOneIn != h*d.Planes {
			fail("T0-T1 failure %+v with %d uplinks and %d planes", f, h, d.Planes)
		}
	}
	if len(d.Failures) == 3 && d.Pods > 1 {
		// The worst-placed node sits in the smallest (last) pod.
		lastPod := pl.T1 - (d.Pods-1)*h
		if f := d.Failures[2]; f.UplinkOneIn != h || f.NodeOneIn != lastPod*h*d.Planes {
			fail("T1-T2 failure %+v with %d T1s in the last pod, %d uplinks, %d planes", f, lastPod, h, d.Planes)
		}
	}
	if p := d.Partial; (p == nil) != (n%h == 0) {
		fail("partial %+v with %d GPUs, %d per T0", p, n, h)
	} else if p != nil {
		if p.GPUsOnLastT0 != n-(pl.T0-1)*h || p.FullBelow%h != 0 || p.FullAbove != p.FullBelow+h ||
			p.FullBelow >= n || p.FullAbove <= n || p.FullAbove > MaxGPUs(d.Tiers, r) {
			fail("partial %+v with %d GPUs, %d per T0", *p, n, h)
		}
	}
	return bad
}

// checkSingleSwitch checks a design of GPUs ≤ radix: one switch per
// plane, every port down, only NIC-T0 links, said in a note.
func checkSingleSwitch(d Design) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	r, n := d.Radix, d.GPUs
	if d.Tiers != 1 || n > r || n < 1 || d.GPUsPerT0 != r || d.Pods != 0 || d.Partial != nil {
		fail("single switch: tiers %d, %d GPUs, radix %d, %d per T0, %d pods, partial %+v", d.Tiers, n, r, d.GPUsPerT0, d.Pods, d.Partial)
	}
	if d.PortGbps*d.Planes != d.NICGbps || d.Radix*d.PortGbps != d.SwitchGbps {
		fail("inconsistent speeds: radix %d, port %d, planes %d, NIC %d, switch %d", r, d.PortGbps, d.Planes, d.NICGbps, d.SwitchGbps)
	}
	if want := (Tally{T0: 1, Switches: 1, NICT0Links: n, Transceivers: 2 * n}); d.PerPlane != want || d.Total != want.times(d.Planes) {
		fail("single switch: per plane %+v, total %+v", d.PerPlane, d.Total)
	}
	if d.OpticsNICEquiv*d.NICGbps != d.Total.Transceivers*d.PortGbps || d.LongestPathSwitches != 1 {
		fail("single switch: optics %d, longest path %d", d.OpticsNICEquiv, d.LongestPathSwitches)
	}
	if d.MaxGPUsTwoTier != r*r/2 || d.MaxGPUsThreeTier != r*r*r/4 {
		fail("maxima %d, %d for radix %d", d.MaxGPUsTwoTier, d.MaxGPUsThreeTier, r)
	}
	if len(d.Failures) != 1 || d.Failures[0] != linkFailure("NIC-T0", "NIC", d.Planes, d.Planes) {
		fail("single switch failures %+v", d.Failures)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], fmt.Sprintf(" on one %d-port switch", r)) {
		fail("single switch notes %q", d.Notes)
	}
	return bad
}

// randomParams draws a valid Params: even radix up to 600, 1–16 planes,
// port speeds from 10G to 400G, and a GPU count that fits the tiers.
func randomParams(rng *rand.Rand, tiers int) Params {
	planes := 1 + rng.IntN(16)
	port := []int{10, 25, 50, 100, 200, 400}[rng.IntN(6)]
	radix := 2 * (1 + rng.IntN(300))
	p := Params{Planes: planes, NICGbps: planes * port}
	if rng.IntN(2) == 0 {
		p.Radix = radix
	} else {
		p.SwitchGbps = radix * port
	}
	p.GPUs = 1 + rng.IntN(min(MaxGPUs(tiers, radix), 1<<24))
	return p
}

func TestInvariantsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		tiers := 2 + i%2
		p := randomParams(rng, tiers)
		d, err := Build(p, tiers)
		if err != nil {
			t.Fatalf("Build(%+v, %d): %v", p, tiers, err)
		}
		if bad := checkDesign(d); len(bad) > 0 {
			t.Fatalf("Build(%+v, %d):\n%s", p, tiers, strings.Join(bad, "\n"))
		}
	}
}

// Every count grows with the GPU count, and the maximum is exact.
func TestMonotoneAndMaximum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		tiers := 2 + i%2
		p := randomParams(rng, tiers)
		r, _ := p.Resolve()
		max := MaxGPUs(tiers, r.Radix)
		q := p
		q.GPUs = min(max, p.GPUs+1+rng.IntN(4*r.Radix))
		a, b := mustBuild(t, p, tiers).Total, mustBuild(t, q, tiers).Total
		as := []int{a.T0, a.T1, a.T2, a.Switches, a.NICT0Links, a.T0T1Links, a.T1T2Links, a.SwitchLinks, a.Transceivers}
		bs := []int{b.T0, b.T1, b.T2, b.Switches, b.NICT0Links, b.T0T1Links, b.T1T2Links, b.SwitchLinks, b.Transceivers}
		for j := range as {
			if bs[j] < as[j] {
				t.Fatalf("%d tiers, %+v: count %d falls from %d to %d going to %d GPUs", tiers, p, j, as[j], bs[j], q.GPUs)
			}
		}
		p.GPUs = max
		mustBuild(t, p, tiers)
		p.GPUs = max + 1
		var se *SizeError
		if _, err := Build(p, tiers); !errors.As(err, &se) || se.Nearest() != max {
			t.Fatalf("%d tiers, %+v: err %v, want SizeError with maximum %d", tiers, p, err, max)
		}
	}
}

// With the same switch, a P-plane two-tier fabric needs 3/5 of the
// switches and 2/3 of the optics of the single-plane three-tier one, at
// every size that fills both (a multiple of the two-tier radix) and needs
// more than one switch, for any P.
func TestCompareRatiosHold(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tried := 0
	for range 2000 {
		r1 := 2 * (2 + rng.IntN(64)) // radix at the NIC speed
		planes := 1 << rng.IntN(4)
		port := 100
		p := Params{Planes: planes, NICGbps: planes * port, SwitchGbps: r1 * planes * port}
		r := r1 * planes
		most := min(MaxGPUs(2, r), MaxGPUs(3, r1))
		if most < 2*r {
			continue // up to r GPUs fit on one switch: no Clos to compare
		}
		p.GPUs = r * (2 + rng.IntN(most/r-1))
		c, err := Compare(p)
		if err != nil {
			t.Fatalf("Compare(%+v): %v", p, err)
		}
		if c.Switches == nil || c.Switches.Text != "3/5" || c.Optics.Text != "2/3" {
			t.Fatalf("Compare(%+v): switches %+v optics %+v, want 3/5 and 2/3", p, c.Switches, c.Optics)
		}
		if bad := append(checkDesign(*c.TwoTier), checkDesign(*c.ThreeTier)...); len(bad) > 0 {
			t.Fatalf("Compare(%+v):\n%s", p, strings.Join(bad, "\n"))
		}
		tried++
	}
	if tried < 500 {
		t.Fatalf("only %d sizes tried", tried)
	}
}

func FuzzBuild(f *testing.F) {
	f.Add(131072, 8, 800, 51200, 0, 2)
	f.Add(65536, 1, 800, 51200, 0, 3)
	f.Add(65000, 4, 800, 0, 256, 3)
	f.Fuzz(func(t *testing.T, gpus, planes, nic, sw, radix, tiers int) {
		p := Params{GPUs: gpus, Planes: planes, NICGbps: nic, SwitchGbps: sw, Radix: radix}
		d, err := Build(p, tiers)
		if err != nil {
			var pe *ParamError
			var se *SizeError
			if (tiers == 2 || tiers == 3) && !errors.As(err, &pe) && !errors.As(err, &se) {
				t.Fatalf("Build(%+v, %d): untyped error %v", p, tiers, err)
			}
			return
		}
		if bad := checkDesign(d); len(bad) > 0 {
			t.Fatalf("Build(%+v, %d):\n%s", p, tiers, strings.Join(bad, "\n"))
		}
		if _, err := Compare(p); err != nil {
			var se *SizeError
			if !errors.As(err, &se) {
				t.Fatalf("Compare(%+v) after a valid Build: %v", p, err)
			}
		}
	})
}
