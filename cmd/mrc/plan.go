package main

// mrc plan: the fabric planner. The sizing lives in package plan; this file
// parses flags and maps errors to one-line usage errors; package report
// renders the result.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/openmrc/mrc/faults"
	"github.com/openmrc/mrc/plan"
	"github.com/openmrc/mrc/report"
)

func runPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", "--gpus N [--planes P] [--radix R] [--nic-gbps G] [--switch-gbps G] [--tiers 2|3] [--switch-w W] [--optic-w W] [--nic-w W] [--mtbf CLASS=TIME,...] [--afr CLASS=F,...] [--json]", stderr)
	gpus := fs.Int("gpus", 0, "number of GPUs, one NIC each (required)")
	planes := fs.Int("planes", 8, "planes: the NIC is split into this many ports, one Clos per port")
	radix := fs.Int("radix", 0, "ports per switch at the plane's port speed (default switch-gbps / (nic-gbps / planes))")
	nicGbps := fs.Int("nic-gbps", 800, "NIC speed in Gb/s")
	switchGbps := fs.Int("switch-gbps", 51200, "switch capacity in Gb/s")
	tiers := fs.Int("tiers", 0, "plan one design only: 2 or 3 tiers, each of --planes planes (default: two-tier beside single-plane three-tier)")
	switchW := fs.Float64("switch-w", 0, "watts of one switch without optics (default 913 per 51.2T of --switch-gbps; docs/plan.md)")
	opticW := fs.Float64("optic-w", plan.DefaultOpticW, "watts of one 800G transceiver; a port of s Gb/s draws s/800 of it")
	nicW := fs.Float64("nic-w", plan.DefaultNICW, "watts of one NIC without optics")
	mtbf := fs.String("mtbf", "", "failure rates: CLASS=TIME,... mean time between failures of one component of a class (nic_port, host_link, t0_t1, t1_t2, t0, t1, t2; docs/failures.md)")
	afr := fs.String("afr", "", "failure rates: CLASS=F,... annualised failure rate of one component of a class")
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	set := fs.given()
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
	rates, err := planRates(*mtbf, *afr)
	if err != nil {
		return err
	}
	p.Rates = rates
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
		return report.WritePlanComparison(stdout, &c)
	}

	d, err := plan.Build(p, *tiers)
	if err != nil {
		return planError(err, p, *tiers)
	}
	if *asJSON {
		return writeJSON(stdout, d)
	}
	return report.WritePlan(stdout, &d)
}

// planRates reads --mtbf and --afr into overrides of the default
// failure table, as a scenario's classes: do.
func planRates(mtbf, afr string) (faults.Table, error) {
	var t faults.Table
	for _, f := range []struct{ flag, list string }{{"mtbf", mtbf}, {"afr", afr}} {
		for _, kv := range strings.Split(f.list, ",") {
			if kv = strings.TrimSpace(kv); kv == "" {
				continue
			}
			name, val, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, usagef("--%s: %q: want CLASS=VALUE", f.flag, kv)
			}
			c, err := faults.ParseClass(strings.TrimSpace(name))
			if err != nil {
				return nil, usagef("--%s: %v", f.flag, err)
			}
			if t == nil {
				t = faults.Table{}
			}
			r, ok := t[c]
			if !ok {
				r = faults.Defaults()[c]
			}
			if r.MTBF, err = parseRate(f.flag, strings.TrimSpace(val)); err != nil {
				return nil, err
			}
			t[c] = r
		}
	}
	return t, nil
}

// parseRate reads one MTBF (a duration) or AFR (failures a year) as an
// MTBF.
func parseRate(flag, v string) (time.Duration, error) {
	if flag == "mtbf" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, usagef("--mtbf: %q: want a positive time between failures, such as 50000h", v)
		}
		return d, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return 0, usagef("--afr: %q: want a positive annualised failure rate, such as 0.05", v)
	}
	return faults.MTBFOfAFR(f), nil
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
				msg += fmt.Sprintf(" (--tiers 3 with --planes %d reaches %s)", r.Planes, report.Count(m))
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
