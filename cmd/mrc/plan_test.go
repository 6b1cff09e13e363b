package main

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/openmrc/mrc/plan"
)

// planJSON runs mrc plan --json with args and decodes stdout into v.
func planJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	args = append([]string{"plan", "--json"}, args...)
	stdout, stderr, code := runMRC(t, args...)
	if code != 0 {
		t.Fatalf("mrc %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("mrc %s: bad JSON: %v\n%s", strings.Join(args, " "), err, stdout)
	}
}

func TestPlanJSONPublished65536(t *testing.T) {
	var c plan.Comparison
	planJSON(t, &c, "--gpus", "65536", "--planes", "8")
	if c.TwoTier == nil || c.ThreeTier == nil || c.Switches == nil || c.Optics == nil {
		t.Fatalf("want both designs and both ratios: %+v", c)
	}
	if c.TwoTier.Total.Switches != 3072 || c.ThreeTier.Total.Switches != 5120 {
		t.Errorf("switches %d vs %d, want 3,072 vs 5,120", c.TwoTier.Total.Switches, c.ThreeTier.Total.Switches)
	}
	if c.Switches.Text != "3/5" || c.Optics.Text != "2/3" {
		t.Errorf("ratios %s and %s, want 3/5 and 2/3", c.Switches.Text, c.Optics.Text)
	}
	if c.TwoTier.LongestPathSwitches != 3 || c.ThreeTier.LongestPathSwitches != 5 {
		t.Errorf("longest paths %d and %d, want 3 and 5", c.TwoTier.LongestPathSwitches, c.ThreeTier.LongestPathSwitches)
	}
	if r := c.ThreeTier; r.Radix != 64 || r.Total.T0 != 2048 || r.Total.T1 != 2048 || r.Total.T2 != 1024 {
		t.Errorf("three-tier radix %d, T0 %d T1 %d T2 %d; want 64, 2048, 2048, 1024", r.Radix, r.Total.T0, r.Total.T1, r.Total.T2)
	}
}

func TestPlanJSONPublished131072(t *testing.T) {
	var c plan.Comparison
	planJSON(t, &c, "--gpus", "131072", "--planes", "8")
	d := c.TwoTier
	if d == nil {
		t.Fatal("two-tier design missing")
	}
	if d.Radix != 512 || d.PerPlane.T0 != 512 || d.PerPlane.T1 != 256 || d.Total.Switches != 6144 {
		t.Errorf("radix %d, per plane T0 %d T1 %d, total %d; want 512, 512, 256, 6,144",
			d.Radix, d.PerPlane.T0, d.PerPlane.T1, d.Total.Switches)
	}
	if c.ThreeTier != nil || len(c.Unfit) != 1 || c.Unfit[0].MaxGPUs != 65536 {
		t.Errorf("the single-plane three-tier design should not fit (max 65,536): %+v", c.Unfit)
	}
	if f := d.Failures[1]; f.Link != "T0-T1" || f.UplinkOneIn != 256 {
		t.Errorf("T0-T1 failure %+v, want 1/256 of a T0's uplinks", f)
	}
}

func TestPlanJSONTiers(t *testing.T) {
	var d plan.Design
	planJSON(t, &d, "--gpus", "65536", "--planes", "1", "--tiers", "3")
	if d.Tiers != 3 || d.Planes != 1 || d.Total.Switches != 5120 || d.MaxGPUsThreeTier != 65536 {
		t.Errorf("three-tier single plane: %d tiers, %d planes, %d switches, max %d",
			d.Tiers, d.Planes, d.Total.Switches, d.MaxGPUsThreeTier)
	}
	if d.Failures[0].NodeFraction != 1 {
		t.Errorf("a single-plane NIC-T0 failure should cost the whole node: %+v", d.Failures[0])
	}

	planJSON(t, &d, "--gpus", "32768", "--planes", "4", "--tiers", "2")
	if d.Tiers != 2 || d.Radix != 256 || d.PortGbps != 200 || d.Failures[0].NodeFraction != 0.25 {
		t.Errorf("4 planes: %d tiers, radix %d, %dG ports, NIC-T0 costs %v; want 2, 256, 200G, 0.25",
			d.Tiers, d.Radix, d.PortGbps, d.Failures[0].NodeFraction)
	}

	// --radix alone defines the switch: 256 × 100G.
	planJSON(t, &d, "--gpus", "1000", "--radix", "256", "--tiers", "2")
	if d.Radix != 256 || d.SwitchGbps != 25600 {
		t.Errorf("--radix 256: radix %d, switch %dG; want 256, 25,600G", d.Radix, d.SwitchGbps)
	}
}

func TestPlanText(t *testing.T) {
	stdout, stderr, code := runMRC(t, "plan", "--gpus", "65536", "--planes", "8")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	// The table: one header row naming both designs, then rows whose cells
	// line up under it.
	head := -1
	for i, l := range lines {
		if strings.Contains(l, "two-tier, 8 planes") && strings.Contains(l, "three-tier, 1 plane") {
			head = i
			break
		}
	}
	if head < 0 {
		t.Fatalf("no side-by-side header:\n%s", stdout)
	}
	col := strings.Index(lines[head], "three-tier")
	rows := map[string][]string{}
	for _, l := range lines[head+1:] {
		if l == "" {
			break
		}
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("row %q: second column does not start at byte %d", l, col)
			continue
		}
		cells := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(l), -1)
		rows[cells[0]] = cells[1:]
	}
	for label, want := range map[string][]string{
		"switches":                         {"3,072", "5,120"},
		"T0 switches":                      {"2,048 (256/plane)", "2,048"},
		"T1 switches":                      {"1,024 (128/plane)", "2,048"},
		"T2 switches":                      {"-", "1,024"},
		"longest path":                     {"3 switches", "5 switches"},
		"max GPUs in 2 tiers":              {"131,072", "2,048"},
		"optics in 800G units":             {"262,144", "393,216"},
		"NIC-T0 link down: node loses":     {"12.5% (1/8)", "100% (cut off)"},
		"T0-T1 link down: T0 uplinks lost": {"0.39% (1/256)", "3.1% (1/32)"},
	} {
		if got := rows[label]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("row %q = %q, want %q", label, got, want)
		}
	}
	want := "verdict: two-tier, 8 planes: 3/5 of the switches and 2/3 of the optics of three-tier, 1 plane; longest path 3 switches vs 5\n"
	if !strings.HasSuffix(stdout, want) {
		t.Errorf("output does not end with the verdict %q:\n%s", want, stdout)
	}
}

func TestPlanTextOneFits(t *testing.T) {
	stdout, _, code := runMRC(t, "plan", "--gpus", "131072", "--planes", "8")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"note: three-tier, 1 plane does not fit: 131,072 GPUs exceed its maximum of 65,536",
		"6,144",
		"verdict: two-tier, 8 planes: fits 131,072 GPUs in 6,144 switches; three-tier, 1 plane tops out at 65,536 GPUs",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestPlanTextPartial(t *testing.T) {
	stdout, _, code := runMRC(t, "plan", "--gpus", "65000", "--planes", "8", "--tiers", "2")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"the last T0 of each plane uses 232 of its 256 down ports",
		"nearest full sizes 64,768 and 65,024",
		"summary: two-tier, 8 planes:",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "three-tier") {
		t.Errorf("--tiers 2 printed the three-tier design:\n%s", stdout)
	}
}

func TestPlanHelp(t *testing.T) {
	for _, args := range [][]string{{"plan", "-h"}, {"plan", "--help"}, {"help", "plan"}} {
		stdout, stderr, code := runMRC(t, args...)
		if code != 0 {
			t.Errorf("mrc %s: exit %d, want 0", strings.Join(args, " "), code)
		}
		if !strings.Contains(stdout+stderr, "Usage: mrc plan --gpus N") || !strings.Contains(stdout+stderr, "-planes") {
			t.Errorf("mrc %s: no usage:\n%s%s", strings.Join(args, " "), stdout, stderr)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // a part of the one-line message
	}{
		{nil, "--gpus N is required"},
		{[]string{"--gpus", "0"}, "--gpus"},
		{[]string{"--gpus", "-3"}, "--gpus"},
		{[]string{"--gpus", "lots"}, "invalid value"},
		{[]string{"--gpus", "10", "extra"}, `unexpected argument "extra"`},
		{[]string{"--gpus", "10", "--bogus"}, "not defined"},
		{[]string{"--gpus", "10", "--planes", "0"}, "--planes"},
		{[]string{"--gpus", "10", "--planes", "3"}, "--planes"},
		{[]string{"--gpus", "10", "--planes", "-8"}, "--planes"},
		{[]string{"--gpus", "10", "--radix", "7"}, "--radix"},
		{[]string{"--gpus", "10", "--radix", "0", "--switch-gbps", "0"}, "--switch-gbps"},
		{[]string{"--gpus", "10", "--radix", "-4"}, "--radix"},
		{[]string{"--gpus", "10", "--radix", "256", "--switch-gbps", "51200"}, "--radix"},
		{[]string{"--gpus", "10", "--nic-gbps", "0"}, "--nic-gbps"},
		{[]string{"--gpus", "10", "--nic-gbps", "-800"}, "--nic-gbps"},
		{[]string{"--gpus", "10", "--switch-gbps", "-1"}, "--switch-gbps"},
		{[]string{"--gpus", "10", "--nic-gbps", "600", "--planes", "2"}, "--switch-gbps"},
		{[]string{"--gpus", "10", "--tiers", "4"}, "--tiers must be 2 or 3"},
		{[]string{"--gpus", "10", "--tiers", "1"}, "--tiers must be 2 or 3"},
		{[]string{"--gpus", "131073", "--tiers", "2"}, "nearest size that fits: 131,072"},
		{[]string{"--gpus", "65537", "--planes", "1", "--tiers", "3"}, "nearest size that fits: 65,536"},
		{[]string{"--gpus", "200000"}, "nearest size that fits: 131,072"},
		{[]string{"--gpus", "99999999999999999999"}, "invalid value"},
		{[]string{"--gpus", "9223372036854775807"}, "nearest size that fits"},
	} {
		line := assertUsageError(t, append([]string{"plan"}, tc.args...)...)
		if !strings.HasPrefix(line, "mrc plan: ") || !strings.Contains(line, tc.want) {
			t.Errorf("mrc plan %s: %q, want it to mention %q", strings.Join(tc.args, " "), line, tc.want)
		}
	}
	// Too big for two tiers, but a three-tier fabric of the same planes
	// would do: say so.
	line := assertUsageError(t, "plan", "--gpus", "200000", "--tiers", "2")
	if !strings.Contains(line, "--tiers 3 with --planes 8 reaches 33,554,432") {
		t.Errorf("no three-tier hint: %q", line)
	}
}

// TestPlanTextSmall checks that a cluster that fits on one switch per
// plane is planned as that switch, and that no failure row claims a loss
// through a tier that carries no traffic.
func TestPlanTextSmall(t *testing.T) {
	stdout, stderr, code := runMRC(t, "plan", "--gpus", "8")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"single switch, 8 planes", "single switch, 1 plane",
		"8 GPUs fit on one 512-port switch per plane",
		"verdict: 8 GPUs fit on one switch per plane in both designs: 8 switches of 512 x 100G ports vs 1 switch of 64 x 800G ports",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	squeeze := regexp.MustCompile(`\s{2,}`)
	for _, l := range strings.Split(stdout, "\n") {
		cells := squeeze.Split(strings.TrimSpace(l), -1)
		switch cells[0] {
		case "switches":
			if strings.Join(cells[1:], "|") != "8|1" {
				t.Errorf("row %q, want 8 and 1 switches", l)
			}
		case "T0-T1 links", "T0-T1 link down: node loses", "T1 switches":
			if strings.Join(cells[1:], "|") != "-|-" {
				t.Errorf("row %q, want no T1 tier", l)
			}
		}
	}

	stdout, _, code = runMRC(t, "plan", "--gpus", "1000")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "T1-T2 link down") && !strings.HasSuffix(l, "none (no traffic at this size)") {
			t.Errorf("row %q claims a loss through the idle T2 tier of one pod", l)
		}
	}
	var d plan.Design
	planJSON(t, &d, "--gpus", "8", "--tiers", "2")
	if d.Tiers != 1 || d.Total.Switches != 8 || d.Total.T0T1Links != 0 {
		t.Errorf("--tiers 2 at 8 GPUs: %d tiers, %d switches, %d T0-T1 links; want a single switch per plane", d.Tiers, d.Total.Switches, d.Total.T0T1Links)
	}
}

// TestPlanEnergy checks that the power and failure figures reach --json
// and the text, that the flags change them, and that bad ones exit 2.
func TestPlanEnergy(t *testing.T) {
	var c plan.Comparison
	planJSON(t, &c, "--gpus", "65536", "--optic-w", "24", "--switch-w", "1000", "--nic-w", "40")
	if c.FabricPower == nil || c.TwoTier.Power.TransceiverW != 3 || c.ThreeTier.Power.SwitchW != 1000 || c.TwoTier.Power.NICPortW != 5 {
		t.Fatalf("power from the flags: %+v / %+v", c.TwoTier.Power, c.FabricPower)
	}
	if c.TwoTier.Reliability.PerDay <= 0 || len(c.ThreeTier.Reliability.Classes) != 7 || c.FailuresPerDay == nil {
		t.Errorf("reliability %+v", c.ThreeTier.Reliability)
	}
	stdout, _, code := runMRC(t, "plan", "--gpus", "65536")
	if code != 0 || !strings.Contains(stdout, "fabric power (switches + optics)") || !strings.Contains(stdout, "energy: two-tier, 8 planes draws 63.8% of the fabric power") {
		t.Errorf("exit %d, text:\n%s", code, stdout)
	}
	for _, f := range []string{"--optic-w", "--switch-w", "--nic-w"} {
		_, stderr, code := runMRC(t, "plan", "--gpus", "4096", f, "-2")
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") > 1 || !strings.Contains(stderr, f) {
			t.Errorf("%s -2: exit %d, %q", f, code, stderr)
		}
	}
}

// TestPlanRateFlags: --mtbf and --afr override the failure table by class,
// the scenario's names; bad ones are one-line usage errors.
func TestPlanRateFlags(t *testing.T) {
	perDay := func(args ...string) map[string]float64 {
		var c plan.Comparison
		planJSON(t, &c, append([]string{"--gpus", "65536"}, args...)...)
		out := map[string]float64{}
		for _, k := range c.TwoTier.Reliability.Classes {
			out[string(k.Class)] = k.PerDay
		}
		return out
	}
	base := perDay()
	if got := perDay("--afr", "t1=1"); !near(got["t1"], 10*base["t1"]) || got["t0"] != base["t0"] {
		t.Errorf("--afr t1=1 (10× the default 0.1): t1 %v a day, want %v; t0 %v, want %v", got["t1"], 10*base["t1"], got["t0"], base["t0"])
	}
	if got := perDay("--mtbf", "host_link=180000h, t0_t1=720000h"); !near(got["host_link"], 2*base["host_link"]) || !near(got["t0_t1"], base["t0_t1"]/2) {
		t.Errorf("--mtbf halving and doubling: %v, defaults %v", got, base)
	}
	for _, args := range [][]string{{"--mtbf", "t9=3h"}, {"--mtbf", "t1=0s"}, {"--mtbf", "t1"}, {"--afr", "t1=-1"}, {"--afr", "nic_port=x"}} {
		_, stderr, code := runMRC(t, append([]string{"plan", "--gpus", "4096"}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, args[0]) {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
