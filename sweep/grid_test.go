package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openmrc/mrc/scenario"
)

// writeSweep writes a sweep file (and the small base scenario beside it)
// into a temporary directory and returns its path.
func writeSweep(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	base, err := os.ReadFile("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.yaml"), base, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func mustLoad(t *testing.T, text string) *Sweep {
	t.Helper()
	sw, err := Load(writeSweep(t, text), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// TestGridProduct: the grid is the product of the axes, the first
// slowest, and every cell's scenario carries its values.
func TestGridProduct(t *testing.T) {
	sw := mustLoad(t, "base: small.yaml\naxes:\n  topology.planes: [1, 2, 4]\n  failures[0].count: [0, 2]\n  seed: 1..3\n")
	if sw.Len() != 18 {
		t.Fatalf("%d cells, want 3×2×3 = 18", sw.Len())
	}
	seen := map[string]bool{}
	for _, c := range sw.Cells() {
		d := sw.Describe(c)
		if seen[d] {
			t.Fatalf("cell %s repeats %s", c.ID, d)
		}
		seen[d] = true
	}
	c := sw.Cell(17)
	if got := sw.Describe(c); got != "topology.planes=4 failures[0].count=2 seed=3" || c.ID != "0017" {
		t.Fatalf("cell 17 = %s %q", c.ID, got)
	}
	if got := sw.Describe(sw.Cell(1)); got != "topology.planes=1 failures[0].count=0 seed=2" {
		t.Fatalf("cell 1 = %q: the last axis should vary fastest", got)
	}
	p, err := sw.Plan(sw.Cell(16), scenario.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Seed != 2 || p.Topology.Planes != 4 || p.Scenario.Failures[0].Count != 2 || p.Scenario.Workload[0].Kind != "permutation" {
		t.Fatalf("cell 16: seed %d, %d planes, failures %+v", p.Seed, p.Topology.Planes, p.Scenario.Failures)
	}
	if err := sw.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestGridZip: zipped axes advance together.
func TestGridZip(t *testing.T) {
	sw := mustLoad(t, `base: small.yaml
axes:
  failures[0].count: [1, 2, 3]
  failures[0].at: [1us, 2us, 3us]
  transports: [[mrc], [roce-pfc, mrc]]
zip:
  - ["failures[0].count", "failures[0].at"]
`)
	if sw.Len() != 6 {
		t.Fatalf("%d cells, want 3 (zipped) × 2 = 6", sw.Len())
	}
	if got := sw.Describe(sw.Cell(3)); got != "failures[0].count=2 failures[0].at=2us transports=roce-pfc+mrc" {
		t.Fatalf("cell 3 = %q", got)
	}
	p, err := sw.Plan(sw.Cell(3), scenario.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2 || p.Runs[0].Transport.Name != "roce-pfc" || p.Scenario.Failures[0].At.D().Microseconds() != 2 {
		t.Fatalf("cell 3: runs %d, failures %+v", len(p.Runs), p.Scenario.Failures)
	}
}

// TestWorkloadOnePart: workload[0] names a workload written as one mapping.
func TestWorkloadOnePart(t *testing.T) {
	sw := mustLoad(t, "base: small.yaml\naxes:\n  workload[0].size: [64KiB, 1MiB]\n  sim.mtu: [1024]\n")
	p, err := sw.Plan(sw.Cell(1), scenario.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Scenario.Workload[0].Size != 1<<20 || p.Scenario.Sim.MTU != 1024 {
		t.Fatalf("workload %+v, mtu %d", p.Scenario.Workload[0], p.Scenario.Sim.MTU)
	}
}

// TestPreset: a preset as the base.
func TestPreset(t *testing.T) {
	sw := mustLoad(t, "preset: incast\naxes:\n  seed: [1, 2]\n")
	p, err := sw.Plan(sw.Cell(1), scenario.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Seed != 2 || p.Scenario.Name != "incast" {
		t.Fatalf("seed %d, name %q", p.Seed, p.Scenario.Name)
	}
}

// TestBadSweeps: each bad sweep file gets one line naming the file, the
// line, and (for a cell) the axis and the cell.
func TestBadSweeps(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"no axes", "base: small.yaml\n", `s.yaml:1: no axes`},
		{"empty axes", "base: small.yaml\naxes: {}\n", `s.yaml:2: no axes`},
		{"null axes", "base: small.yaml\naxes:\n", `s.yaml:2: no axes`},
		{"empty axis", "base: small.yaml\naxes:\n  seed: []\n", `s.yaml:3: axis seed is empty`},
		{"empty range", "base: small.yaml\naxes:\n  seed: 5..1\n", `s.yaml:3: axis seed: "5..1": the range is empty`},
		{"bad range", "base: small.yaml\naxes:\n  seed: a..b\n", `s.yaml:3: axis seed: "a..b": a range is two integers`},
		{"no base", "axes:\n  seed: [1]\n", `s.yaml:1: no base scenario`},
		{"both bases", "base: small.yaml\npreset: incast\naxes: {seed: [1]}\n", `s.yaml:\d: give base or preset, not both`},
		{"missing base", "base: nope.yaml\naxes: {seed: [1]}\n", `s.yaml:1: base .*nope.yaml: no such file`},
		{"unknown preset", "preset: nope\naxes: {seed: [1]}\n", `s.yaml:1: preset: no preset "nope"`},
		{"unknown key", "base: small.yaml\naxis: {seed: [1]}\n", `s.yaml:2: unknown key "axis" in the sweep`},
		{"bad path", "base: small.yaml\naxes:\n  topology..planes: [1]\n", `s.yaml:3: axis "topology..planes": not a key path`},
		{"too many", "base: small.yaml\naxes:\n  seed: 1..1000\n  sim.mtu: 1..1000\n", `s.yaml:2: the grid has 1000000 cells, more than 100000: pass --force`},
		{"zip lengths", "base: small.yaml\naxes:\n  seed: [1, 2]\n  sim.mtu: [1024]\nzip: [[seed, sim.mtu]]\n", `s.yaml:5: zip: axes seed \(2 values\) and sim.mtu \(1 values\)`},
		{"zip unknown", "base: small.yaml\naxes:\n  seed: [1, 2]\nzip: [[seed, mtu]]\n", `s.yaml:4: zip: "mtu" is not one of the axes`},
	}
	for _, tc := range cases {
		_, err := Load(writeSweep(t, tc.text), Options{})
		var se *Error
		if err == nil || !errors.As(err, &se) {
			t.Errorf("%s: err %v, want an *Error", tc.name, err)
			continue
		}
		if !regexp.MustCompile(tc.want).MatchString(strings.TrimPrefix(err.Error(), filepath.Dir(se.File)+"/")) {
			t.Errorf("%s: %q, want %q", tc.name, err, tc.want)
		}
	}
}

// TestForce: --force allows a grid over the limit.
func TestForce(t *testing.T) {
	sw, err := Load(writeSweep(t, "base: small.yaml\naxes:\n  seed: 1..1000\n  sim.mtu: 1..101\n"), Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if sw.Len() != 101_000 {
		t.Fatalf("%d cells", sw.Len())
	}
}

// TestBadCells: a value that does not fit names the axis, the cell and
// the value's line; so does a key path the scenario lacks.
func TestBadCells(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"bad value", "base: small.yaml\naxes:\n  seed: [1, 2]\n  topology.hosts:\n    - 16\n    - 15\n",
			`s.yaml:6: axis topology.hosts = 15, cell 0001 \(seed=1 topology.hosts=15\): topology: hosts 15 not divisible by t0_down 4`},
		{"unknown key", "base: small.yaml\naxes:\n  topology.plane: [2]\n",
			`s.yaml:3: axis topology.plane = 2, cell 0000 \(topology.plane=2\): unknown key "plane" in topology \(did you mean "planes"\?\)`},
		{"no such failure", "base: small.yaml\naxes:\n  failures[3].count: [2]\n",
			`s.yaml:3: axis failures\[3\].count = 2, cell 0000 .*: failures\[3\]: the base scenario's list has 1 entries`},
		{"wrong type", "base: small.yaml\naxes:\n  topology.planes: [two]\n",
			`s.yaml:3: axis topology.planes = two, cell 0000 .*: topology.planes: want an integer`},
		{"bad transport", "base: small.yaml\naxes:\n  transports: [[mrc], [nope]]\n",
			`s.yaml:3: axis transports = nope, cell 0001 .*transport`},
	}
	for _, tc := range cases {
		sw, err := Load(writeSweep(t, tc.text), Options{})
		if err != nil {
			t.Errorf("%s: Load: %v", tc.name, err)
			continue
		}
		err = sw.Validate()
		var se *Error
		if err == nil || !errors.As(err, &se) {
			t.Errorf("%s: err %v, want an *Error", tc.name, err)
			continue
		}
		if !regexp.MustCompile(tc.want).MatchString(strings.TrimPrefix(err.Error(), filepath.Dir(se.File)+"/")) {
			t.Errorf("%s: %q, want %q", tc.name, err, tc.want)
		}
	}
}

// TestHash: the hash changes with the sweep file and with the base.
func TestHash(t *testing.T) {
	file := writeSweep(t, "base: small.yaml\naxes: {seed: [1, 2]}\n")
	a, err := Load(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, []byte("base: small.yaml\naxes: {seed: [1, 3]}\n"), 0o644)
	b, _ := Load(file, Options{})
	base := filepath.Join(filepath.Dir(file), "small.yaml")
	data, _ := os.ReadFile(base)
	os.WriteFile(base, append(data, []byte("seed: 4\n")...), 0o644)
	c, err := Load(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash == b.Hash || b.Hash == c.Hash || len(a.Hash) != 64 {
		t.Fatalf("hashes %s %s %s", a.Hash, b.Hash, c.Hash)
	}
}

// TestExamples: every sweep in examples/sweeps loads, and its every cell
// is a valid scenario.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/sweeps/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		sw, err := Load(f, Options{})
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if err := sw.Validate(); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// TestSet: an override replaces a value, a list or a mapping, adds a
// missing key (and its missing parents), and refuses a missing list
// entry or a path through a value.
func TestSet(t *testing.T) {
	sw := mustLoad(t, `base: small.yaml
axes:
  failures: [[], [{kind: switch_down, element: t1-p0-1, at: 1us}, {kind: link_down, element: random:t0-t1, count: 3, at: 2us}]]
  transports: [[{name: wide, base: mrc, ev: {active_per_plane: 32}}]]
  queues.trim_at: [8KiB]
  sim.host_groups: [1]
`)
	p, err := sw.Plan(sw.Cell(1), scenario.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Scenario
	if len(s.Failures) != 2 || s.Failures[0].Kind != "switch_down" || s.Failures[1].Count != 3 {
		t.Errorf("failures %+v", s.Failures)
	}
	if len(s.Transports) != 1 || s.Transports[0].Name != "wide" || s.Transports[0].EV.ActivePerPlane != 32 {
		t.Errorf("transports %+v", s.Transports)
	}
	if s.Queues.TrimAt != 8<<10 || s.Sim.HostGroups != 1 || s.Topology.Hosts != 16 {
		t.Errorf("queues %+v, sim %+v, topology %+v", s.Queues, s.Sim, s.Topology)
	}
	p, err = sw.Plan(sw.Cell(0), scenario.Overrides{})
	if err != nil || len(p.Scenario.Failures) != 0 {
		t.Errorf("failures: [] gives %v, %v", p, err)
	}
	for _, tc := range []struct{ path, want string }{
		{"workload[1].size", `workload\[1\]: the base scenario's workload is not a list`},
		{"failures[1].count", `failures\[1\]: the base scenario's list has 1 entries`},
		{"topology.hosts.count", `topology.hosts.count: the base scenario's topology.hosts is not a mapping`},
		{"outputs.capture[0]", `outputs.capture: the base scenario has no outputs.capture to index`},
	} {
		sw := mustLoad(t, "base: small.yaml\naxes:\n  "+tc.path+": [1]\n")
		_, err := sw.Plan(sw.Cell(0), scenario.Overrides{})
		if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestRelativeInputs: a cell reads the base scenario's input files
// (htsim's) relative to the base scenario, wherever the sweep file is.
func TestRelativeInputs(t *testing.T) {
	base, err := filepath.Abs("../examples/htsim-two-planes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sw := mustLoad(t, "base: "+base+"\naxes:\n  seed: [1, 2]\n")
	p, err := sw.Plan(sw.Cell(1), scenario.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Seed != 2 || p.Topology.Planes != 2 || p.Topology.Hosts != 1024 {
		t.Fatalf("seed %d, %d planes, %d hosts", p.Seed, p.Topology.Planes, p.Topology.Hosts)
	}
}
