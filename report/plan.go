package report

// The text `mrc plan` prints: a header, the designs side by side, notes
// and a verdict or summary line. The sizing itself is package plan.

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/openmrc/mrc/plan"
)

// WritePlanComparison writes comparison c: its designs that fit side by
// side, why the others do not, their notes and the verdict.
func WritePlanComparison(w io.Writer, c *plan.Comparison) error {
	var ds []*plan.Design
	for _, d := range []*plan.Design{c.TwoTier, c.ThreeTier} {
		if d != nil {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return fmt.Errorf("report: plan comparison for %s GPUs has no design that fits", Count(c.GPUs))
	}
	planHeader(w, ds[0])
	if err := planTable(w, ds); err != nil {
		return err
	}
	if err := PlanEnergy(w, ds); err != nil {
		return err
	}
	for _, u := range c.Unfit {
		fmt.Fprintf(w, "note: %s does not fit: %s\n", u.Design, u.Reason)
	}
	planNotes(w, ds)
	if v := PlanEnergyVerdict(c); v != "" {
		fmt.Fprintf(w, "energy: %s\n", v)
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n", c.Verdict)
	return err
}

// WritePlan writes design d alone: its table, notes and a summary line.
func WritePlan(w io.Writer, d *plan.Design) error {
	planHeader(w, d)
	if err := planTable(w, []*plan.Design{d}); err != nil {
		return err
	}
	if err := PlanEnergy(w, []*plan.Design{d}); err != nil {
		return err
	}
	planNotes(w, []*plan.Design{d})
	_, err := fmt.Fprintf(w, "summary: %s: %s, %s optics in %s units, longest path %s\n",
		d.Name, switches(d.Total.Switches), Count(d.OpticsNICEquiv), speed(d.NICGbps), switches(d.LongestPathSwitches))
	return err
}

// planHeader names what was planned; d is any of the designs.
func planHeader(w io.Writer, d *plan.Design) {
	fmt.Fprintf(w, "%s GPUs, one %s NIC each, %s switches, full bisection\n\n",
		Count(d.GPUs), speed(d.NICGbps), speed(d.SwitchGbps))
}

// planTable writes the designs side by side, one column each.
func planTable(w io.Writer, ds []*plan.Design) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	three := false
	for _, d := range ds {
		three = three || d.Tiers == 3
	}
	row := func(label string, cell func(d *plan.Design) string) {
		cells := []string{label}
		for _, d := range ds {
			cells = append(cells, cell(d))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	perPlane := func(total, one int, d *plan.Design) string {
		if total == 0 {
			return "-"
		}
		if d.Planes == 1 {
			return Count(total)
		}
		return fmt.Sprintf("%s (%s/plane)", Count(total), Count(one))
	}
	failure := func(link string, uplink bool) func(d *plan.Design) string {
		return func(d *plan.Design) string {
			for _, f := range d.Failures {
				if f.Link != link {
					continue
				}
				if f.NoTraffic {
					return "none (no traffic at this size)"
				}
				if uplink {
					return share(f.UplinkOneIn)
				}
				return share(f.NodeOneIn)
			}
			return "-"
		}
	}

	row("", func(d *plan.Design) string { return d.Name })
	row("NIC ports (planes)", func(d *plan.Design) string { return fmt.Sprintf("%d x %s", d.Planes, speed(d.PortGbps)) })
	row("switch ports (radix)", func(d *plan.Design) string { return fmt.Sprintf("%d x %s", d.Radix, speed(d.PortGbps)) })
	row("GPUs per T0", func(d *plan.Design) string {
		if d.Tiers == 1 {
			return Count(d.GPUsPerT0) + " (one switch)"
		}
		return Count(d.GPUsPerT0)
	})
	if three {
		row("pods per plane", func(d *plan.Design) string {
			if d.Pods == 0 {
				return "-"
			}
			return Count(d.Pods)
		})
	}
	row("T0 switches", func(d *plan.Design) string { return perPlane(d.Total.T0, d.PerPlane.T0, d) })
	row("T1 switches", func(d *plan.Design) string { return perPlane(d.Total.T1, d.PerPlane.T1, d) })
	if three {
		row("T2 switches", func(d *plan.Design) string { return perPlane(d.Total.T2, d.PerPlane.T2, d) })
	}
	row("switches", func(d *plan.Design) string { return Count(d.Total.Switches) })
	row("NIC-T0 links", func(d *plan.Design) string { return Count(d.Total.NICT0Links) })
	row("T0-T1 links", func(d *plan.Design) string { return dash(d.Total.T0T1Links) })
	if three {
		row("T1-T2 links", func(d *plan.Design) string { return dash(d.Total.T1T2Links) })
	}
	row("switch-to-switch links", func(d *plan.Design) string { return dash(d.Total.SwitchLinks) })
	row("transceivers (2 per link)", func(d *plan.Design) string {
		return fmt.Sprintf("%s x %s", Count(d.Total.Transceivers), speed(d.PortGbps))
	})
	row("optics in "+speed(ds[0].NICGbps)+" units", func(d *plan.Design) string { return Count(d.OpticsNICEquiv) })
	row("longest path", func(d *plan.Design) string { return switches(d.LongestPathSwitches) })
	row("max GPUs in 2 tiers", func(d *plan.Design) string { return Count(d.MaxGPUsTwoTier) })
	row("max GPUs in 3 tiers", func(d *plan.Design) string { return Count(d.MaxGPUsThreeTier) })
	row("NIC-T0 link down: node loses", failure("NIC-T0", false))
	row("T0-T1 link down: node loses", failure("T0-T1", false))
	row("T0-T1 link down: T0 uplinks lost", failure("T0-T1", true))
	if three {
		row("T1-T2 link down: node loses", failure("T1-T2", false))
		row("T1-T2 link down: T1 uplinks lost", failure("T1-T2", true))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

func planNotes(w io.Writer, ds []*plan.Design) {
	for _, d := range ds {
		for _, n := range d.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", d.Name, n)
		}
	}
}

// switches counts switches: "1 switch", "3,072 switches".
func switches(n int) string {
	if n == 1 {
		return "1 switch"
	}
	return Count(n) + " switches"
}

func dash(n int) string {
	if n == 0 {
		return "-"
	}
	return Count(n)
}

// speed formats Gb/s: 800 → "800G", 51200 → "51.2T".
func speed(gbps int) string {
	if gbps >= 1000 {
		return strconv.FormatFloat(float64(gbps)/1000, 'f', -1, 64) + "T"
	}
	return strconv.Itoa(gbps) + "G"
}

// share formats the unit fraction 1/oneIn as a percentage with the fraction
// beside it: 32 → "3.1% (1/32)", 1 → "100% (cut off)".
func share(oneIn int) string {
	if oneIn == 1 {
		return "100% (cut off)"
	}
	v := 100 / float64(oneIn)
	var s string
	switch {
	case v >= 10:
		s = strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
	case v >= 0.001:
		s = strconv.FormatFloat(v, 'g', 2, 64)
	default:
		s = "<0.001"
	}
	return fmt.Sprintf("%s%% (1/%d)", s, oneIn)
}
