package scenario

import (
	"strings"
	"testing"
)

const mtbfSmall = `topology: {hosts: 64, planes: 4, t0_down: 8, t0_up: 4}
workload: {kind: permutation, size: 64KiB}
duration: 2ms
`

// TestMTBFExpands checks that an mtbf process becomes the simulator's
// failures on real elements, reproducibly from the seed, and that the
// report's header says the compression.
func TestMTBFExpands(t *testing.T) {
	yml := mtbfSmall + `failures:
  - kind: mtbf
    compress: 2e11
    classes:
      t1: {mtbf: 2000h, repair: 300us, down: 0, blackhole: 0.5, reboot: 0.5}
`
	build := func(seed uint64) *Plan {
		s, err := parse(t, yml)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Build(Overrides{Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := build(1)
	fs := p.Runs[0].Failures
	if len(fs) < 5 {
		t.Fatalf("%d failures drawn: %+v", len(fs), fs)
	}
	kinds := map[string]int{}
	for _, f := range fs {
		kinds[string(f.Kind)]++
		if _, err := p.Topology.Find(f.Element); err != nil {
			t.Errorf("failure on %q: %v", f.Element, err)
		}
		if f.At < 0 || f.At >= 2e6 || f.Until != 0 && f.Until <= f.At {
			t.Errorf("failure %+v outside the 2 ms window", f)
		}
	}
	if kinds["link_flap"] == 0 || kinds["switch_reboot"] == 0 {
		t.Errorf("no link flaps or no switch reboots (the t1 repair fits the run) among %v", kinds)
	}
	if h := strings.Join(p.Failures, "\n"); !strings.Contains(h, "compressed ×2e+11") || !strings.Contains(h, "failures drawn") {
		t.Errorf("header %q does not say the compression", h)
	}
	if again := build(1).Runs[0].Failures; len(again) != len(fs) || again[0] != fs[0] || again[len(fs)-1] != fs[len(fs)-1] {
		t.Error("the same seed drew different failures")
	}
	if other := build(2).Runs[0].Failures; len(other) == len(fs) && other[0] == fs[0] {
		t.Error("another seed drew the same failures")
	}
}

// TestMTBFErrors checks mtbf's one-line errors and the long-repair note.
func TestMTBFErrors(t *testing.T) {
	for _, c := range []struct{ fail, want string }{
		{"  - kind: mtbf\n    classes:\n      t1: {mtbf: 0s}\n", `x.yaml:7: failures[0].classes.t1.mtbf: 0s: want a positive time between failures`},
		{"  - kind: mtbf\n    classes:\n      t1: {mtbf: -5h}\n", `x.yaml:7: failures[0].classes.t1.mtbf: "-5h": a duration cannot be negative`},
		{"  - kind: mtbf\n    classes:\n      t9: {mtbf: 5h}\n", `x.yaml:7: failures[0].classes.t9: unknown class "t9" (want nic_port, host_link, t0_t1, t1_t2, t0, t1, t2)`},
		{"  - kind: mtbf\n    compress: 0\n", `x.yaml:6: failures[0].compress: 0: want a factor above 0`},
		{"  - kind: mtbf\n    compress: -3\n", `x.yaml:6: failures[0].compress: -3: want a factor above 0`},
		{"  - kind: mtbf\n    classes:\n      t0_t1: {reboot: 1}\n", `x.yaml:7: failures[0].classes.t0_t1.reboot: only switches blackhole or reboot`},
		{"  - kind: mtbf\n    element: t1-p0-1\n", `x.yaml:5: failures[0]: an mtbf process picks its own elements`},
		{"  - kind: link_down\n    element: t1-p0-1\n    compress: 2\n", `x.yaml:5: failures[0]: compress and classes are only for kind mtbf`},
	} {
		s, err := parse(t, mtbfSmall+"failures:\n"+c.fail)
		if err == nil {
			_, err = s.Build(Overrides{})
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want %q…", c.fail, err, c.want)
		}
	}
	s, err := parse(t, mtbfSmall+"failures:\n  - kind: mtbf\n    compress: 1e9\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if h := strings.Join(p.Failures, "\n"); !strings.Contains(h, "note: t1 repair time 10.0 min is longer than the run") {
		t.Errorf("no note of the long repair in %q", h)
	}
}
