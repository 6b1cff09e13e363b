package main

// mrc plan: the fabric planner. The sizing lives in package plan; this file
// parses flags, maps errors to one-line usage errors and renders the result.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/openmrc/mrc/plan"
	"github.com/openmrc/mrc/report"
)

func init() {
	commands["plan"] = command{
		summary: "size a multi-plane two-tier fabric against a single-plane three-tier one",
		run:     runPlan,
	}
}

func runPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", "--gpus N [--planes P] [--radix R] [--nic-gbps G] [--switch-gbps G] [--tiers 2|3] [--switch-w W] [--optic-w W] [--nic-w W] [--json]", stderr)
	gpus := fs.Int("gpus", 0, "number of GPUs, one NIC each (required)")
	planes := fs.Int("planes", 8, "planes: the NIC is split into this many ports, one Clos per port")
	radix := fs.Int("radix", 0, "ports per switch at the plane's port speed (default switch-gbps / (nic-gbps / planes))")
	nicGbps := fs.Int("nic-gbps", 800, "NIC speed in Gb/s")
	switchGbps := fs.Int("switch-gbps", 51200, "switch capacity in Gb/s")
	tiers := fs.Int("tiers", 0, "plan one design only: 2 or 3 tiers, each of --planes planes (default: two-tier beside single-plane three-tier)")
	switchW := fs.Float64("switch-w", 0, "watts of one switch without optics (default 913 per 51.2T of --switch-gbps; docs/plan.md)")
	opticW := fs.Float64("optic-w", plan.DefaultOpticW, "watts of one 800G transceiver; a port of s Gb/s draws s/800 of it")
	nicW := fs.Float64("nic-w", plan.DefaultNICW, "watts of one NIC without optics")
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["gpus"] {
		return usagef("--gpus N is required")
	}
	if *tiers != 0 && *tiers != 2 && *tiers != 3 {
		return usagef("--tiers must be 2 or 3, got %d", *tiers)
	}
	p := plan.Params{GPUs: *gpus, Planes: *planes, NICGbps: *nicGbps, SwitchGbps: *switchGbps, Radix: *radix,
		SwitchW: *switchW, OpticW: *opticW, NICW: *nicW}
	for _, f := range []string{"switch-w", "optic-w", "nic-w"} {
		if v := fs.Lookup(f).Value.(flag.Getter).Get().(float64); set[f] && v <= 0 {
			return usagef("--%s: want a positive number of watts, got %v", f, v)
		}
	}
	if set["radix"] && !set["switch-gbps"] {
		p.SwitchGbps = 0 // the radix defines the switch
	}

	if *tiers == 0 {
		c, err := plan.Compare(p)
		if err != nil {
			return planError(err, p, 0)
		}
		if *asJSON {
			return writeJSON(stdout, c)
		}
		var ds []*plan.Design
		for _, d := range []*plan.Design{c.TwoTier, c.ThreeTier} {
			if d != nil {
				ds = append(ds, d)
			}
		}
		header(stdout, ds[0])
		if err := table(stdout, ds); err != nil {
			return err
		}
		if err := report.PlanEnergy(stdout, ds); err != nil {
			return err
		}
		for _, u := range c.Unfit {
			fmt.Fprintf(stdout, "note: %s does not fit: %s\n", u.Design, u.Reason)
		}
		notes(stdout, ds)
		if v := report.PlanEnergyVerdict(&c); v != "" {
			fmt.Fprintf(stdout, "energy: %s\n", v)
		}
		fmt.Fprintf(stdout, "verdict: %s\n", c.Verdict)
		return nil
	}

	d, err := plan.Build(p, *tiers)
	if err != nil {
		return planError(err, p, *tiers)
	}
	if *asJSON {
		return writeJSON(stdout, d)
	}
	header(stdout, &d)
	if err := table(stdout, []*plan.Design{&d}); err != nil {
		return err
	}
	if err := report.PlanEnergy(stdout, []*plan.Design{&d}); err != nil {
		return err
	}
	notes(stdout, []*plan.Design{&d})
	fmt.Fprintf(stdout, "summary: %s: %s, %s optics in %s units, longest path %s\n",
		d.Name, switches(d.Total.Switches), num(d.OpticsNICEquiv), speed(d.NICGbps), switches(d.LongestPathSwitches))
	return nil
}

// planError turns an error from package plan into a one-line usage error
// (exit 2) that names flags rather than fields.
func planError(err error, p plan.Params, tiers int) error {
	var pe *plan.ParamError
	if errors.As(err, &pe) {
		return usagef("--%s: %s", strings.ReplaceAll(pe.Field, "_", "-"), pe.Msg)
	}
	var se *plan.SizeError
	if errors.As(err, &se) {
		msg := se.Error()
		// A P-plane three-tier fabric may still fit: say so.
		if r, rerr := p.Resolve(); rerr == nil && tiers != 3 {
			if m := plan.MaxGPUs(3, r.Radix); p.GPUs <= m {
				msg += fmt.Sprintf(" (--tiers 3 with --planes %d reaches %s)", r.Planes, num(m))
			}
		}
		return usageError{msg}
	}
	return usageError{err.Error()}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// header names what was planned; d is any of the designs.
func header(w io.Writer, d *plan.Design) {
	fmt.Fprintf(w, "%s GPUs, one %s NIC each, %s switches, full bisection\n\n",
		num(d.GPUs), speed(d.NICGbps), speed(d.SwitchGbps))
}

// table writes the designs side by side, one column each.
func table(w io.Writer, ds []*plan.Design) error {
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
			return num(total)
		}
		return fmt.Sprintf("%s (%s/plane)", num(total), num(one))
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
			return num(d.GPUsPerT0) + " (one switch)"
		}
		return num(d.GPUsPerT0)
	})
	if three {
		row("pods per plane", func(d *plan.Design) string {
			if d.Pods == 0 {
				return "-"
			}
			return num(d.Pods)
		})
	}
	row("T0 switches", func(d *plan.Design) string { return perPlane(d.Total.T0, d.PerPlane.T0, d) })
	row("T1 switches", func(d *plan.Design) string { return perPlane(d.Total.T1, d.PerPlane.T1, d) })
	if three {
		row("T2 switches", func(d *plan.Design) string { return perPlane(d.Total.T2, d.PerPlane.T2, d) })
	}
	row("switches", func(d *plan.Design) string { return num(d.Total.Switches) })
	row("NIC-T0 links", func(d *plan.Design) string { return num(d.Total.NICT0Links) })
	row("T0-T1 links", func(d *plan.Design) string { return dash(d.Total.T0T1Links) })
	if three {
		row("T1-T2 links", func(d *plan.Design) string { return dash(d.Total.T1T2Links) })
	}
	row("switch-to-switch links", func(d *plan.Design) string { return dash(d.Total.SwitchLinks) })
	row("transceivers (2 per link)", func(d *plan.Design) string {
		return fmt.Sprintf("%s x %s", num(d.Total.Transceivers), speed(d.PortGbps))
	})
	row("optics in "+speed(ds[0].NICGbps)+" units", func(d *plan.Design) string { return num(d.OpticsNICEquiv) })
	row("longest path", func(d *plan.Design) string { return switches(d.LongestPathSwitches) })
	row("max GPUs in 2 tiers", func(d *plan.Design) string { return num(d.MaxGPUsTwoTier) })
	row("max GPUs in 3 tiers", func(d *plan.Design) string { return num(d.MaxGPUsThreeTier) })
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

func notes(w io.Writer, ds []*plan.Design) {
	for _, d := range ds {
		for _, n := range d.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", d.Name, n)
		}
	}
}

// num formats n with thousands separators: 131072 → "131,072".
func num(n int) string {
	if n < 0 {
		return "-" + num(-n)
	}
	s := strconv.Itoa(n)
	var b strings.Builder
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// switches counts switches: "1 switch", "3,072 switches".
func switches(n int) string {
	if n == 1 {
		return "1 switch"
	}
	return num(n) + " switches"
}

func dash(n int) string {
	if n == 0 {
		return "-"
	}
	return num(n)
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
