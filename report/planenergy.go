package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/openmrc/mrc/plan"
)

// PlanEnergy writes the designs' power and expected failures side by
// side, one column each, for mrc plan.
func PlanEnergy(w io.Writer, ds []*plan.Design) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	row := func(label string, cell func(d *plan.Design) string) {
		cells := []string{label}
		for _, d := range ds {
			cells = append(cells, cell(d))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	watts := func(v float64) string { return fmt.Sprintf("%.3g W", v) }
	kw := func(v float64) string { return Count(int64(v+0.5)) + " kW" }
	row("power and failures", func(d *plan.Design) string { return d.Name })
	row("switch, without optics", func(d *plan.Design) string { return watts(d.Power.SwitchW) })
	row("transceiver", func(d *plan.Design) string { return fmt.Sprintf("%s at %dG", watts(d.Power.TransceiverW), d.PortGbps) })
	row("NIC port (NIC / planes)", func(d *plan.Design) string { return watts(d.Power.NICPortW) })
	row("switches, power", func(d *plan.Design) string { return kw(d.Power.SwitchesKW) })
	row("optics, power", func(d *plan.Design) string { return kw(d.Power.OpticsKW) })
	row("fabric power (switches + optics)", func(d *plan.Design) string { return kw(d.Power.FabricKW) })
	row("fabric per GPU", func(d *plan.Design) string { return fmt.Sprintf("%.1f W", d.Power.FabricWPerGPU) })
	row("NICs, power", func(d *plan.Design) string { return kw(d.Power.NICsKW) })
	row("total per GPU (fabric + NIC)", func(d *plan.Design) string { return fmt.Sprintf("%.1f W", d.Power.TotalWPerGPU) })
	row("transceivers per GPU", func(d *plan.Design) string { return fmt.Sprintf("%.3g", d.Reliability.TransceiversPerGPU) })
	classes := map[string]bool{}
	var order []string
	for _, d := range ds {
		for _, c := range d.Reliability.Classes {
			if !classes[string(c.Class)] {
				classes[string(c.Class)] = true
				order = append(order, string(c.Class))
			}
		}
	}
	for _, name := range order {
		row("failures/day: "+name, func(d *plan.Design) string {
			for _, c := range d.Reliability.Classes {
				if string(c.Class) == name {
					return fmt.Sprintf("%.3g", c.PerDay)
				}
			}
			return "-"
		})
	}
	row("failures/day", func(d *plan.Design) string { return fmt.Sprintf("%.3g", d.Reliability.PerDay) })
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// PlanEnergyVerdict sums up the power and failure comparison in one line,
// or returns "" when the comparison has no ratios.
func PlanEnergyVerdict(c *plan.Comparison) string {
	if c.FabricPower == nil || c.TwoTier == nil || c.ThreeTier == nil {
		return ""
	}
	return fmt.Sprintf("%s draws %s of the fabric power of %s (%.0f vs %.0f kW); %.3g vs %.3g transceivers per GPU, %.3g vs %.3g expected failures a day",
		c.TwoTier.Name, c.FabricPower.Text, c.ThreeTier.Name, c.FabricPower.TwoTier, c.FabricPower.ThreeTier,
		c.TransceiversPerGPU.TwoTier, c.TransceiversPerGPU.ThreeTier, c.FailuresPerDay.TwoTier, c.FailuresPerDay.ThreeTier)
}
