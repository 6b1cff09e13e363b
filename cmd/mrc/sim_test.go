package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/trace/jsonl"
	"github.com/openmrc/mrc/wire"
)

// simJSON is what the tests read of `mrc sim --json` (docs/results.md).
type simJSON struct {
	Scenario    string  `json:"scenario"`
	Seed        uint64  `json:"seed"`
	SimTimeNs   int64   `json:"sim_time_ns"`
	WallS       float64 `json:"wall_s"`
	Events      uint64  `json:"events"`
	Bytes       uint64  `json:"bytes"`
	Interrupted bool    `json:"interrupted"`
	Results     []struct {
		Transport      string `json:"transport"`
		Flows          int    `json:"flows"`
		FlowsCompleted int    `json:"flows_completed"`
		BytesDelivered uint64 `json:"bytes_delivered"`
		FCT            struct {
			Min, P50, P99, Max int64
		} `json:"fct_ns"`
		CompletionNs      int64             `json:"completion_ns"`
		Goodput           float64           `json:"goodput_fraction_of_ideal"`
		Retransmits       uint64            `json:"retransmits"`
		Trims             uint64            `json:"trims"`
		Drops             map[string]uint64 `json:"drops"`
		BypassNs          *int64            `json:"bypass_ns"`
		FailedDataPackets uint64            `json:"failed_data_packets"`
		Interrupted       bool              `json:"interrupted"`
		PerPlane          []struct {
			Plane   int     `json:"plane"`
			Goodput float64 `json:"goodput_gbps"`
		} `json:"per_plane"`
		FlowResults []json.RawMessage `json:"flow_results"`
		Tags        []struct {
			Tag string `json:"tag"`
		} `json:"tags"`
	} `json:"results"`
}

// requiredKeys are the keys docs/results.md promises, top level and per
// result.
var (
	requiredKeys       = []string{"scenario", "seed", "sim_time_ns", "wall_s", "events", "interrupted", "results", "fabric", "workload", "failure_schedule"}
	requiredResultKeys = []string{"transport", "flows", "flows_completed", "bytes_delivered", "fct_ns", "completion_ns",
		"goodput_fraction_of_ideal", "retransmits", "trims", "drops", "bypass_ns", "per_plane", "failures", "series",
		"link_utilisation", "tags", "flow_results", "failed_data_packets", "ideal_ns", "events", "wall_s"}
)

// checkJSONKeys checks that data has every required key.
func checkJSONKeys(t *testing.T, data []byte) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	for _, k := range requiredKeys {
		if _, ok := top[k]; !ok {
			t.Errorf("JSON has no %q", k)
		}
	}
	var results []map[string]json.RawMessage
	if err := json.Unmarshal(top["results"], &results); err != nil {
		t.Fatalf("results: %v", err)
	}
	for i, r := range results {
		for _, k := range requiredResultKeys {
			if _, ok := r[k]; !ok {
				t.Errorf("results[%d] has no %q", i, k)
			}
		}
		var fct map[string]json.RawMessage
		if err := json.Unmarshal(r["fct_ns"], &fct); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"min", "p50", "p99", "max"} {
			if _, ok := fct[k]; !ok {
				t.Errorf("results[%d].fct_ns has no %q", i, k)
			}
		}
	}
}

func readSimJSON(t *testing.T, data []byte) *simJSON {
	t.Helper()
	checkJSONKeys(t, data)
	var r simJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestSimDefault runs the README's first command, `mrc sim`, with every
// output, and checks that it shows what it claims: MRC completes the
// collective while links fail, stops sending into them, and beats the
// baselines; the JSON, CSV files and plots hold what they should.
func TestSimDefault(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	stdout, stderr, code := runMRC(t, "sim", "--json", jsonPath, "--csv", filepath.Join(dir, "csv"), "--plot", filepath.Join(dir, "plots"))
	if code != 0 {
		t.Fatalf("mrc sim: exit %d\n%s", code, stderr)
	}
	for _, bad := range []string{"panic", "goroutine"} {
		if strings.Contains(stderr, bad) {
			t.Fatalf("stderr: %s", stderr)
		}
	}
	// The table.
	for _, want := range []string{"mrc sim: default (seed 1)", "fabric    128 hosts × 8 planes", "failures  16 random T0–T1 links down at 50 µs",
		"completion time", "FCT p50", "FCT p99", "goodput, % of ideal", "retransmits", "trims", "drops", "bypass time", "What you are looking at"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^ +mrc +oblivious +roce-pfc$`).MatchString(stdout) {
		t.Errorf("no header row of transports:\n%s", stdout)
	}
	if !regexp.MustCompile(`(?m)^flows completed +16,384/16,384 +16,384/16,384 `).MatchString(stdout) {
		t.Errorf("MRC and oblivious should complete every flow:\n%s", stdout)
	}

	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	r := readSimJSON(t, data)
	if r.Scenario != "default" || r.Seed != 1 || r.Interrupted || len(r.Results) != 3 || r.Events == 0 || r.WallS <= 0 {
		t.Fatalf("report: %+v", r)
	}
	m, ob, roce := r.Results[0], r.Results[1], r.Results[2]
	if m.Transport != "mrc" || ob.Transport != "oblivious" || roce.Transport != "roce-pfc" {
		t.Fatalf("transports %s %s %s", m.Transport, ob.Transport, roce.Transport)
	}
	if m.FlowsCompleted != m.Flows || m.BytesDelivered != r.Bytes {
		t.Errorf("mrc: %d of %d flows, %d of %d bytes", m.FlowsCompleted, m.Flows, m.BytesDelivered, r.Bytes)
	}
	if m.BypassNs == nil || *m.BypassNs <= 0 || *m.BypassNs >= m.CompletionNs-50_000 {
		t.Errorf("mrc should stop using the failed links well before it finishes: bypass %v, completion %d", m.BypassNs, m.CompletionNs)
	}
	if ob.BypassNs == nil || *ob.BypassNs <= *m.BypassNs || ob.FailedDataPackets <= m.FailedDataPackets || ob.CompletionNs <= m.CompletionNs {
		t.Errorf("oblivious spraying should keep hitting the failed links and finish later: %+v vs %+v", ob, m)
	}
	if roce.FlowsCompleted >= roce.Flows {
		t.Errorf("roce-pfc completed every flow despite the failed links")
	}
	if m.FCT.Min <= 0 || m.FCT.Min > m.FCT.P50 || m.FCT.P50 > m.FCT.P99 || m.FCT.P99 > m.FCT.Max || m.Goodput <= 0.3 || m.Goodput > 1 {
		t.Errorf("mrc: fct %+v goodput %v", m.FCT, m.Goodput)
	}
	if len(m.PerPlane) != 8 || m.FlowResults != nil {
		t.Errorf("mrc: %d planes, %d flow results (want none without --flows)", len(m.PerPlane), len(m.FlowResults))
	}

	// CSV files: a header and rows, one column naming the transport.
	for _, name := range []string{"summary", "flows", "series", "planes", "links", "drops", "failures"} {
		f, err := os.ReadFile(filepath.Join(dir, "csv", name+".csv"))
		if err != nil {
			t.Error(err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(f)), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "transport,") {
			t.Errorf("%s.csv: %d lines, header %q", name, len(lines), lines[0])
		}
		cols := strings.Count(lines[0], ",")
		for i, l := range lines[1:] {
			if strings.Count(l, ",") < cols || !strings.HasPrefix(l, "mrc,") && !strings.HasPrefix(l, "oblivious,") && !strings.HasPrefix(l, "roce-pfc,") {
				t.Errorf("%s.csv line %d: %q", name, i+2, l)
				break
			}
		}
		if name == "summary" && len(lines) != 4 || name == "flows" && len(lines) != 1+3*16384 {
			t.Errorf("%s.csv: %d lines", name, len(lines))
		}
	}

	// Plots: valid PNGs of the expected size, SVGs with the series named.
	series := map[string][]string{
		"goodput":           {"mrc", "oblivious", "roce-pfc (runs on to", "failure", "time (µs)"},
		"fct_cdf":           {"mrc", "oblivious", "roce-pfc (", "log scale"},
		"plane_utilisation": {"mrc", "oblivious", "roce-pfc"},
		"link_utilisation":  {"mrc", "host→t0", "t0→t1"},
		"planes-mrc":        {"plane 0", "plane 7", "failure"},
		"planes-oblivious":  {"plane 0"},
		"planes-roce-pfc":   {"plane 0"},
	}
	for name, want := range series {
		checkPNG(t, filepath.Join(dir, "plots", name+".png"))
		texts := svgTexts(t, filepath.Join(dir, "plots", name+".svg"))
		for _, w := range want {
			found := false
			for _, s := range texts {
				found = found || strings.Contains(s, w)
			}
			if !found {
				t.Errorf("%s.svg has no text %q (has %q)", name, w, texts)
			}
		}
	}
}

// checkPNG checks that path is a PNG image of the plots' size.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if cfg.Width != 768 || cfg.Height != 432 {
		t.Errorf("%s: %d×%d, want 768×432", path, cfg.Width, cfg.Height)
	}
	// And the whole image decodes.
	f.Seek(0, io.SeekStart)
	if _, err := png.Decode(f); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

// svgTexts parses an SVG file as XML and returns its text elements.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return nil
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	var texts []string
	inText, root := false, ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Errorf("%s: not valid XML: %v", path, err)
			return nil
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
			}
			inText = e.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(e))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q", path, root)
	}
	return texts
}

// TestSimJSONStdout: with --json -, standard output is only the JSON and
// the table goes to stderr; per-flow results come with --flows; tagged
// flows are summarised.
func TestSimJSONStdout(t *testing.T) {
	stdout, stderr, code := runMRC(t, "sim", "--preset", "incast", "--json", "-", "--flows")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := readSimJSON(t, []byte(stdout))
	if len(r.Results) != 3 || r.Results[0].Transport != "mrc" || len(r.Results[0].FlowResults) != 17 {
		t.Fatalf("results: %+v", r.Results)
	}
	for _, x := range r.Results {
		if x.BypassNs != nil {
			t.Errorf("%s: bypass_ns %d without failures, want null", x.Transport, *x.BypassNs)
		}
		if len(x.Tags) != 1 || x.Tags[0].Tag != "victim" {
			t.Errorf("%s: tags %+v", x.Transport, x.Tags)
		}
	}
	if !strings.Contains(stderr, "victim FCT p99") || !strings.Contains(stderr, "mrc sim: incast") {
		t.Errorf("stderr should hold the table:\n%s", stderr)
	}
}

// TestSimDeterministic: the same scenario and seed give the same JSON
// whatever the number of workers; another seed gives another run.
func TestSimDeterministic(t *testing.T) {
	run := func(args ...string) map[string]any {
		stdout, stderr, code := runMRC(t, append([]string{"sim", "--preset", "flap-storm", "--transports", "mrc", "--json", "-", "--flows"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(stdout), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "wall_s")
		for _, r := range m["results"].([]any) {
			delete(r.(map[string]any), "wall_s")
		}
		return m
	}
	a, b := run("--workers", "1"), run("--workers", "2")
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Error("results differ between 1 and 2 workers")
	}
	c := run("--seed", "2")
	jc, _ := json.Marshal(c)
	if bytes.Equal(ja, jc) || c["seed"].(float64) != 2 {
		t.Error("--seed 2 gave the same run")
	}
}

// TestSimUsageErrors: every bad invocation gets one line on stderr naming
// the problem (file:line where there is one) and exit status 2.
func TestSimUsageErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := "topology: {hosts: 16, planes: 2, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 64KiB}\n"
	good := write("good.yaml", small)
	unknown := write("unknown.yaml", "topology:\n  hosts: 16\n  t0_down: 4\n  t0_up: 2\n  planez: 2\nworkload: {kind: permutation, size: 64KiB}\n")
	badNum := write("badnum.yaml", "topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload:\n  kind: permutation\n  size: lots\n")
	impossible := write("impossible.yaml", "topology: {hosts: 18, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 64KiB}\n")
	radix := write("radix.yaml", "topology: {hosts: 16, t0_down: 4, t0_up: 2, radix: 3}\nworkload: {kind: permutation, size: 64KiB}\n")
	zeroRate := write("rate.yaml", "topology: {hosts: 16, t0_down: 4, t0_up: 2, host_rate: 0G}\nworkload: {kind: permutation, size: 64KiB}\n")
	missing := write("missing.yaml", small+"failures:\n  - kind: switch_down\n    element: t1-p0-7\n")
	syntax := write("syntax.yaml", "topology: {hosts: 16\nworkload: x\n")
	empty := write("empty.yaml", "")
	badCM := write("bad.cm", "Nodes 16\nConnections 2\n0->1 size 100\n2=>3 size 100\n")
	badSimAI := write("bad.txt", "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 all_gpus: 16\n1\nl -1 5 GATHER 1 1 NONE 0 1 NONE 0 1\n")
	oddSimAI := write("odd.txt", "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 5 all_gpus: 16\n1\nl -1 5 ALLREDUCE 1 1 NONE 0 1 NONE 0 1\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"sim", "--seed", "-1"}, `invalid value "-1" for --seed: want a whole number`},
		{[]string{"sim", "--workers", "x"}, `invalid value "x" for --workers: want a whole number`},
		{[]string{"sim", "--workers", "0"}, "--workers 0"},
		{[]string{"sim", "--stop", "-5s"}, "--stop -5s"},
		{[]string{"sim", "--progress", "maybe"}, `--progress "maybe"`},
		{[]string{"sim", "--preset", "nope"}, `no preset "nope" (have default,`},
		{[]string{"sim", "--preset", "incast", good}, "give one scenario"},
		{[]string{"sim", good, good}, "want one scenario file, got 2"},
		{[]string{"sim", filepath.Join(dir, "nope.yaml")}, "nope.yaml: no such file or directory"},
		{[]string{"sim", unknown}, unknown + `:5: unknown key "planez" in topology (did you mean "planes"?)`},
		{[]string{"sim", badNum}, badNum + `:4: workload.size: "lots" is not a size`},
		{[]string{"sim", impossible}, impossible + ":1: topology: hosts 18 not divisible by t0_down 4"},
		{[]string{"sim", radix}, radix + ":1: topology:"},
		{[]string{"sim", zeroRate}, zeroRate + `:1: topology.host_rate: "0G"`},
		{[]string{"sim", missing}, missing + `:5: failures[0].element:`},
		{[]string{"sim", syntax}, syntax + ":1: did not find expected"},
		{[]string{"sim", empty}, "empty scenario"},
		{[]string{"sim", good, "--transports", "mrc,nope"}, `--transports: unknown transport "nope"`},
		{[]string{"sim", "--tm", filepath.Join(dir, "nope.cm")}, "nope.cm: no such file or directory"},
		{[]string{"sim", "--tm", badCM}, badCM + ":4:"},
		{[]string{"sim", "--tm", badCM, "--planes", "0"}, "--planes 0"},
		{[]string{"sim", "--topo", "x.topo"}, "--topo needs --tm"},
		{[]string{"sim", good, "--planes", "2"}, "--planes is for htsim inputs"},
		{[]string{"sim", "--workload", badSimAI}, badSimAI + `:3: forward: unknown collective "GATHER"`},
		{[]string{"sim", "--workload", oddSimAI}, oddSimAI + ": model_parallel_NPU_group 5 does not divide the 16 GPUs"},
		{[]string{"sim", "--workload", filepath.Join(dir, "nope.txt")}, "nope.txt: no such file or directory"},
		{[]string{"sim", good, "--gpus-per-server", "2"}, "--gpus-per-server is for SimAI workloads"},
		{[]string{"sim", good, "--json", filepath.Join(dir, "no", "such", "r.json")}, "--json: "},
		{[]string{"sim", good, "--csv", good}, "--csv: "},
		{[]string{"sim", good, "--pcap", filepath.Join(dir, "c.pcapng"), "--pcap-filter", "op=bogus"}, "--pcap-filter:"},
		{[]string{"sim", good, "--pcap-filter", "op=data"}, "need --pcap FILE"},
		{[]string{"sim", good, "--trace", filepath.Join(dir, "t.jsonl"), "--trace-filter", "bogus=1"}, "--trace-filter:"},
		{[]string{"sim", good, "--pcap", filepath.Join(dir, "c.pcapng"), "--capture", "h99/p0"}, `tap "h99/p0"`},
		{[]string{"sim", good, "--pcap", filepath.Join(dir, "c.pcapng"), "--capture", "flow:999"}, "no flow has ID 999"},
		{[]string{"sim", good, "--pcap", "-"}, "not standard output"},
		{[]string{"sim", "--list", good}, "--list takes no scenario"},
	} {
		line := assertUsageError(t, c.args...)
		if !strings.Contains(line, c.want) {
			t.Errorf("mrc %s:\n got %q\nwant it to contain %q", strings.Join(c.args, " "), line, c.want)
		}
	}
	// A run that fails before simulating leaves no empty results file.
	out := filepath.Join(dir, "r.json")
	assertUsageError(t, "sim", good, "--json", out, "--pcap", filepath.Join(dir, "c.pcapng"), "--capture", "flow:999")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s behind (stat: %v)", out, err)
	}
}

// TestSimListAndShow: --list names every preset, the default first and
// the slow one marked; --show prints a preset that runs as a file.
func TestSimListAndShow(t *testing.T) {
	stdout, _, code := runMRC(t, "sim", "--list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{" * default ", "htsim-perm", "incast", "flap-storm", "blackhole", "big", "SLOW"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--list lacks %q:\n%s", want, stdout)
		}
	}
	yml, _, code := runMRC(t, "sim", "--preset", "flap-storm", "--show")
	if code != 0 || !strings.Contains(yml, "kind: link_flap") {
		t.Fatalf("--show: exit %d\n%s", code, yml)
	}
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runMRC(t, "sim", path, "--transports", "mrc", "--quiet")
	if code != 0 || !strings.Contains(out, "mrc sim: flap-storm") || stderr != "" {
		t.Errorf("running the shown preset: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestSimHtsim runs htsim inputs: a chained (triggered) all-to-all, on a
// generated leaf-spine and on an htsim topology file.
func TestSimHtsim(t *testing.T) {
	cm := filepath.Join("..", "..", "scenario", "presets", "htsim", "alltoall_serial_16n.cm")
	stdout, stderr, code := runMRC(t, "sim", "--tm", cm, "--transports", "mrc", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := readSimJSON(t, []byte(stdout))
	if x := r.Results[0]; x.Flows != 240 || x.FlowsCompleted != 240 || r.Scenario != "alltoall_serial_16n" {
		t.Errorf("%s: %d of %d flows", r.Scenario, x.FlowsCompleted, x.Flows)
	}
	if !strings.Contains(stderr, "16 hosts × 1 plane, leaf-spine") {
		t.Errorf("table: %s", stderr)
	}
	topo := filepath.Join("..", "..", "scenario", "presets", "htsim", "fat_tree_1024.topo")
	stdout, stderr, code = runMRC(t, "sim", "--tm", cm, "--topo", topo, "--transports", "mrc", "--quiet")
	if code != 0 || !strings.Contains(stdout, "three-tier fat tree") || !strings.Contains(stdout, "240/240") {
		t.Errorf("on a fat tree: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestSimInterrupt: Ctrl-C stops a long run cleanly and still writes the
// partial results, every output in place and no temporary file left;
// progress shows on stderr with --progress on.
func TestSimInterrupt(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	cmd := exec.Command(mrcBin, "sim", filepath.Join("testdata", "long.yaml"), "--json", jsonPath, "--csv", filepath.Join(dir, "csv"),
		"--trace", filepath.Join(dir, "t.jsonl"), "--trace-filter", "kind=ev_state", "--pcap", filepath.Join(dir, "c.pcapng"), "--progress", "on")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the run to be under way, then interrupt it.
	var stderr strings.Builder
	sc := bufio.NewScanner(errPipe)
	progressed := make(chan bool, 1)
	done := make(chan bool)
	go func() {
		sent := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !sent && strings.Contains(sc.Text(), "simulated") && strings.Contains(sc.Text(), "events/s") {
				sent = true
				progressed <- true
			}
		}
		close(done)
	}()
	select {
	case <-progressed:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("no progress within a minute:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { <-done; waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("mrc sim did not stop within 30 s of SIGINT")
	}
	if cmd.ProcessState.ExitCode() != 130 {
		t.Errorf("exit %v, want 130", err)
	}
	errText := stderr.String()
	if strings.Contains(errText, "panic") || strings.Contains(errText, "goroutine ") {
		t.Errorf("stderr: %s", errText)
	}
	lines := strings.Split(strings.TrimSpace(errText), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "mrc sim: interrupted: mrc stopped after") {
		t.Errorf("last line of stderr: %q", last)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	r := readSimJSON(t, data)
	if !r.Interrupted || len(r.Results) != 1 || !r.Results[0].Interrupted || r.Results[0].FlowsCompleted == r.Results[0].Flows {
		t.Errorf("partial JSON: %+v", r)
	}
	if !strings.Contains(stdout.String(), "INTERRUPTED: partial results") {
		t.Errorf("table: %s", stdout.String())
	}
	for _, f := range []string{"csv/summary.csv", "t-mrc.jsonl", "c-mrc.pcapng"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("no partial %s: %v", f, err)
		}
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

// TestSimCapture captures a simulated flow with a trim, a NACK, a
// retransmission and an EV retirement, and checks that mrc dump (and
// tshark with the Lua dissector, where installed) decodes every packet,
// and that the trace records the retirement.
func TestSimCapture(t *testing.T) {
	dir := t.TempDir()
	capPath, tracePath := filepath.Join(dir, "c.pcapng"), filepath.Join(dir, "t.jsonl")
	_, stderr, code := runMRC(t, "sim", filepath.Join("testdata", "capture.yaml"), "--pcap", capPath, "--trace", tracePath,
		"--trace-filter", "kind=ev_state,nacked,retransmitted")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The trace: host 4 retires EVs of the failed path (plane 0).
	tf, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	retired := map[uint32]bool{}
	kinds := map[trace.Kind]int{}
	jr := jsonl.NewReader(tf)
	for {
		rec, err := jr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds[rec.Kind]++
		if rec.Kind == trace.EVState && rec.Host == "h4" && rec.To == "ASSUMED_BAD" {
			retired[uint32(rec.EV)] = true
		}
	}
	if len(retired) == 0 || kinds[trace.PacketNacked] == 0 || kinds[trace.PacketRetransmitted] == 0 || kinds[trace.PacketSent] != 0 {
		t.Fatalf("trace: kinds %v, %d EVs retired at h4", kinds, len(retired))
	}

	// The capture, read back.
	f, err := os.Open(capPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := pcap.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var pkts []wire.Packet
	var last int64
	for {
		p, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.Time < last {
			t.Fatalf("packet %d goes back in time", len(pkts)+1)
		}
		last = p.Time
		var wp wire.Packet
		_ = wp.Decode(p.Data[14:])
		pkts = append(pkts, wp)
	}
	if n := len(rd.Interfaces()); n != 4 {
		t.Errorf("%d capture interfaces, want 4 (the NIC ports of hosts 0 and 4)", n)
	}
	frames := dumpJSON(t, capPath)
	if len(frames) != len(pkts) || len(frames) < 100 {
		t.Fatalf("mrc dump shows %d packets, the capture has %d", len(frames), len(pkts))
	}
	var trims, nacks, rtx, probes, phantom int
	for i := range frames {
		fr := &frames[i]
		if !fr.MRC || len(fr.Problems) > 0 {
			t.Fatalf("packet %d (%s): problems %q", fr.Number, fr.Summary, fr.Problems)
		}
		if fr.BTH.DestQP != 0x100 && fr.BTH.DestQP != 0x103 {
			t.Errorf("packet %d (%s) is not of flow 4", fr.Number, fr.Summary)
		}
		p := &pkts[i]
		switch {
		case fr.Trimmed:
			trims++
			if fr.IfName != "h0/p0" && fr.IfName != "h0/p1" {
				t.Errorf("trimmed packet %d seen at %s, want the receiver", fr.Number, fr.IfName)
			}
		case p.BTH.Opcode == wire.OpNACK && p.NACK.Reason == wire.NackTrimmedLastHop:
			nacks++
		case p.BTH.Opcode.IsData() && p.BTH.Rtx:
			rtx++
		case p.BTH.Opcode == wire.OpProbe && retired[outerEV(p)]:
			probes++
		}
		if p.BTH.Opcode.IsData() && !fr.Trimmed {
			if fr.CapLen >= fr.Len {
				t.Errorf("packet %d: data with its payload captured (%d of %d)", fr.Number, fr.CapLen, fr.Len)
			}
			phantom++
		}
		if p.BTH.Opcode == wire.OpSACK && (fr.UDP.Checksum.OK == nil || !*fr.UDP.Checksum.OK || fr.ICRC == nil || !*fr.ICRC.OK) {
			t.Errorf("packet %d (%s): checksums %+v %+v", fr.Number, fr.Summary, fr.UDP.Checksum, fr.ICRC)
		}
	}
	if trims == 0 || nacks == 0 || rtx == 0 || probes == 0 || phantom == 0 {
		t.Fatalf("capture lacks a case: %d trimmed, %d trim NACKs, %d retransmissions, %d probes of retired EVs, %d data packets",
			trims, nacks, rtx, probes, phantom)
	}

	// tshark with the dissector decodes the same.
	rows := tsharkDecode(t, capPath)
	if len(rows) != len(frames) {
		t.Fatalf("tshark shows %d packets, mrc dump %d", len(rows), len(frames))
	}
	for i, row := range rows {
		p, fr := &pkts[i], &frames[i]
		ev := outerEV(p)
		want := map[string]string{
			"_ws.col.Protocol":     "MRC",
			"_ws.col.Info":         fr.Summary,
			"frame.interface_name": fr.IfName,
			"mrc.bth.opcode":       fmt.Sprintf("0x%02x", uint8(p.BTH.Opcode)),
			"mrc.bth.psn":          fmt.Sprint(p.BTH.PSN),
			"mrc.bth.rtx":          b2s(p.BTH.Rtx),
			"mrc.ev":               fmt.Sprintf("0x%08x", ev),
			"mrc.ev.plane":         fmt.Sprint(wire.EV(ev).Plane()),
			"mrc.ev.path":          fmt.Sprint(wire.EV(ev).Path()),
			"mrc.malformed":        "",
		}
		if p.BTH.Opcode.IsData() {
			want["mrc.trimmed"] = map[bool]string{true: "1", false: ""}[fr.Trimmed]
			if !fr.Trimmed {
				want["mrc.not_captured"] = "1"
			}
		}
		if p.BTH.Opcode == wire.OpNACK {
			want["mrc.neth.reason"] = fmt.Sprintf("0x%02x", uint8(p.NACK.Reason))
		}
		for k, v := range want {
			if row[k] != v {
				t.Errorf("packet %d (%s): tshark %s = %q, want %q", i+1, fr.Summary, k, row[k], v)
			}
		}
	}
}

// TestSimFailedRunKeepsOutputs: a run that fails its checks (a typo in a
// capture point, a filter, a failure element, a transport) leaves every
// output of an earlier run as it was, for every output flag, and no
// temporary file behind; a run that succeeds replaces them.
func TestSimFailedRunKeepsOutputs(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "mine.yaml")
	body := "topology: {hosts: 16, planes: 2, t0_down: 4, t0_up: 2}\ntransports: [mrc, oblivious]\nworkload: {kind: permutation, size: 64KiB}\n"
	if err := os.WriteFile(scen, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	badFailure := filepath.Join(dir, "badfail.yaml")
	if err := os.WriteFile(badFailure, []byte(body+"failures:\n  - {kind: link_down, element: random:t1-t2, at: 1us}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The earlier results: one file per output, per transport where
	// the output has one file per transport.
	old := map[string]string{}
	for _, f := range []string{"keep.json", "keep-mrc.jsonl", "keep-oblivious.jsonl", "x-mrc.pcapng", "x-oblivious.pcapng",
		"csv/summary.csv", "csv/flows.csv", "plots/goodput.png", "plots/goodput.svg"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		old[p] = "earlier result " + f + "\n"
		if err := os.WriteFile(p, []byte(old[p]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outputs := []string{"--json", filepath.Join(dir, "keep.json"), "--trace", filepath.Join(dir, "keep.jsonl"),
		"--pcap", filepath.Join(dir, "x.pcapng"), "--csv", filepath.Join(dir, "csv"), "--plot", filepath.Join(dir, "plots")}
	listDir := func() []string {
		var names []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, p)
			}
			return nil
		})
		return names
	}
	before := listDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{scen, "--capture", "h99"}, `tap "h99"`},
		{[]string{scen, "--capture", "flow:999"}, "no flow has ID 999"},
		{[]string{scen, "--pcap-filter", "op=bogus"}, "--pcap-filter:"},
		{[]string{scen, "--trace-filter", "bogus=1"}, "--trace-filter:"},
		{[]string{scen, "--transports", "mrc,nope"}, `unknown transport "nope"`},
		{[]string{badFailure}, "failures[0]"},
	} {
		args := append(append([]string{"sim"}, c.args...), outputs...)
		if line := assertUsageError(t, args...); !strings.Contains(line, c.want) {
			t.Errorf("mrc %s: %q, want %q", strings.Join(args, " "), line, c.want)
		}
		for p, want := range old {
			if got, err := os.ReadFile(p); err != nil || string(got) != want {
				t.Errorf("mrc %s: %s is now %q (%v), want it untouched", strings.Join(c.args, " "), p, got, err)
			}
		}
		if after := listDir(); !slices.Equal(after, before) {
			t.Errorf("mrc %s: files before %q, after %q", strings.Join(c.args, " "), before, after)
		}
	}

	// A run that succeeds replaces them all and leaves no temporary file.
	args := append([]string{"sim", scen, "--capture", "h1", "--quiet"}, outputs...)
	if _, stderr, code := runMRC(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for p, was := range old {
		if got, err := os.ReadFile(p); err != nil || string(got) == was {
			t.Errorf("%s not replaced by the run (%v)", p, err)
		}
	}
	for _, p := range listDir() {
		if strings.HasPrefix(filepath.Base(p), ".") {
			t.Errorf("temporary file left behind: %s", p)
		}
	}
	readSimJSON(t, mustRead(t, filepath.Join(dir, "keep.json")))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSimStopsAtDuration: a run that hits the duration limit with flows
// unfinished reports the limit as its simulated time, not its last
// event, and says so in the JSON (stopped_by), in a row of the table and
// in a note under it; a run whose flows are done says "done".
func TestSimStopsAtDuration(t *testing.T) {
	// The leaf-spine example as it shipped: ECMP reconverges after 1 s,
	// so RoCE's retry timer is quiet for long stretches (from about
	// 4 ms on) with flows unfinished.
	scen := filepath.Join(t.TempDir(), "ls.yaml")
	body := `name: ls
seed: 3
duration: 20ms
topology: {kind: clos2, hosts: 64, planes: 1, t0_down: 8, t0_up: 8, host_rate: 400G, host_delay: 500ns, fabric_delay: 1us, switch_latency: 300ns}
transports: [mrc, roce-pfc]
workload: {kind: permutation, size: 8MiB}
failures:
  - {kind: switch_down, element: t1-3, at: 30us}
  - {kind: link_down, element: t0-0/t1-5, at: 40us, until: 120us}
`
	if err := os.WriteFile(scen, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	type res struct {
		Transport      string `json:"transport"`
		Flows          int    `json:"flows"`
		FlowsCompleted int    `json:"flows_completed"`
		FlowsFailed    int    `json:"flows_failed"`
		CompletionNs   int64  `json:"completion_ns"`
		SimTimeNs      int64  `json:"sim_time_ns"`
		StoppedBy      string `json:"stopped_by"`
	}
	run := func(args ...string) (string, []res) {
		dir := t.TempDir()
		jsonPath := filepath.Join(dir, "r.json")
		stdout, stderr, code := runMRC(t, append([]string{"sim", scen, "--json", jsonPath}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var r struct {
			SimTimeNs int64 `json:"sim_time_ns"`
			Results   []res `json:"results"`
		}
		if err := json.Unmarshal(mustRead(t, jsonPath), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != 2 {
			t.Fatalf("%d results", len(r.Results))
		}
		return stdout, r.Results
	}
	for _, c := range []struct {
		stop, limit string
		stopNs      int64
	}{{"", "20 ms", 20_000_000}, {"50ms", "50 ms", 50_000_000}} {
		var args []string
		if c.stop != "" {
			args = []string{"--stop", c.stop}
		}
		table, rs := run(args...)
		m, roce := rs[0], rs[1]
		if m.StoppedBy != "done" || m.FlowsCompleted != m.Flows || m.SimTimeNs < m.CompletionNs || m.SimTimeNs >= c.stopNs {
			t.Errorf("--stop %q: mrc %+v, want done before the limit", c.stop, m)
		}
		left := roce.Flows - roce.FlowsCompleted - roce.FlowsFailed
		if roce.StoppedBy != "duration" || roce.SimTimeNs != c.stopNs || left == 0 {
			t.Errorf("--stop %q: roce-pfc %+v, want stopped by the duration at %d ns with flows unfinished", c.stop, roce, c.stopNs)
		}
		limit := c.limit
		if !regexp.MustCompile(`(?m)^stopped by +last flow +` + limit + ` limit$`).MatchString(table) {
			t.Errorf("--stop %q: no stopped-by row saying %q:\n%s", c.stop, limit, table)
		}
		if !regexp.MustCompile(`(?m)^simulated / wall time +\S+ µs / \S+ s +` + limit + ` / `).MatchString(table) {
			t.Errorf("--stop %q: simulated time is not the limit:\n%s", c.stop, table)
		}
		note := fmt.Sprintf("roce-pfc hit the %s duration limit with %d of %d flows unfinished", limit, left, roce.Flows)
		if !strings.Contains(table, note) {
			t.Errorf("--stop %q: no note %q:\n%s", c.stop, note, table)
		}
	}

	// The example as shipped runs long enough (and routing reconverges
	// soon enough) for RoCE to recover and finish.
	stdout, stderr, code := runMRC(t, "sim", filepath.Join("..", "..", "examples", "leaf-spine-failures.yaml"), "--transports", "roce-pfc", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ex struct{ Results []res }
	if err := json.Unmarshal([]byte(stdout), &ex); err != nil {
		t.Fatal(err)
	}
	if x := ex.Results[0]; x.StoppedBy != "done" || x.FlowsCompleted != x.Flows {
		t.Errorf("examples/leaf-spine-failures.yaml: roce-pfc %+v, want it to recover and finish", x)
	}
	if strings.Contains(stderr, "stopped by") {
		t.Errorf("a run whose flows are all done has a stopped-by row:\n%s", stderr)
	}
}

// TestSimJSONSchema: the JSON has exactly the keys docs/results.md
// documents, each always present. The keys come from the document: its
// example, checked key by key at every level against a real run (every
// element of every array, both ways), and the tables' first columns,
// checked against the top level and each result (both ways).
func TestSimJSONSchema(t *testing.T) {
	doc := string(mustRead(t, filepath.Join("..", "..", "docs", "results.md")))
	example, ok := between(doc, "```json\n", "```")
	if !ok {
		t.Fatal("docs/results.md has no JSON example")
	}
	var want any
	if err := json.Unmarshal([]byte(example), &want); err != nil {
		t.Fatalf("docs/results.md's example is not JSON: %v", err)
	}
	causes := docKeys(t, tableRow(t, doc, "`drops`"))

	// A run with every part filled: failures, a tagged and untagged
	// flows, per-flow results.
	scen := filepath.Join(t.TempDir(), "s.yaml")
	body := "topology: {hosts: 16, planes: 2, t0_down: 4, t0_up: 2}\ntransports: [mrc, roce-pfc]\n" +
		"workload: {kind: incast, senders: 4, size: 64KiB, victim: {src: 8, dst: 1}}\n" +
		"failures:\n  - {kind: link_down, element: random:t0-t1, at: 2us}\n"
	if err := os.WriteFile(scen, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runMRC(t, "sim", scen, "--flows", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	compareKeys(t, "", want, got, causes)

	// The tables.
	top, _ := got.(map[string]any)
	results, _ := top["results"].([]any)
	if len(results) == 0 {
		t.Fatal("no results")
	}
	for _, tb := range []struct {
		section string
		obj     map[string]any
	}{{"## Top level", top}, {"## Per transport", results[0].(map[string]any)}} {
		text, ok := between(doc, tb.section, "\n## ")
		if !ok {
			t.Fatalf("docs/results.md has no section %q", tb.section)
		}
		documented := map[string]bool{}
		for _, line := range strings.Split(text, "\n") {
			if cols := strings.Split(line, "|"); len(cols) > 2 && strings.Contains(cols[1], "`") {
				for _, k := range docKeys(t, cols[1]) {
					documented[strings.TrimSuffix(k, "[]")] = true
				}
			}
		}
		for k := range documented {
			if _, ok := tb.obj[k]; !ok {
				t.Errorf("%s: docs/results.md documents %q, the JSON lacks it", tb.section, k)
			}
		}
		for k := range tb.obj {
			if !documented[k] {
				t.Errorf("%s: the JSON has %q, docs/results.md's table does not document it", tb.section, k)
			}
		}
	}
}

// compareKeys checks that got has the keys of want at every level:
// objects have the same keys, and every element of an array of objects
// has the keys of want's first element. drops is a map by cause: its
// keys must be among causes.
func compareKeys(t *testing.T, path string, want, got any, causes []string) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: the document has an object, the JSON %T", path, got)
			return
		}
		if strings.HasSuffix(path, ".drops") {
			for k := range g {
				if !slices.Contains(causes, k) {
					t.Errorf("%s: drop cause %q is not documented (%q)", path, k, causes)
				}
			}
			return
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				t.Errorf("%s: the JSON lacks %q, which docs/results.md's example has", path, k)
				continue
			}
			compareKeys(t, path+"."+k, v, gv, causes)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				t.Errorf("%s: the JSON has %q, docs/results.md's example does not", path, k)
			}
		}
	case []any:
		if len(w) == 0 {
			return
		}
		if _, isObj := w[0].(map[string]any); !isObj {
			return
		}
		g, ok := got.([]any)
		if !ok || len(g) == 0 {
			t.Errorf("%s: the document has an array of objects, the JSON %v", path, got)
			return
		}
		for i, e := range g {
			compareKeys(t, fmt.Sprintf("%s[%d]", path, i), w[0], e, causes)
		}
	}
}

// between returns the text of s between the first from and the next to.
func between(s, from, to string) (string, bool) {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return "", false
	}
	body, _, _ := strings.Cut(rest, to)
	return body, true
}

// tableRow returns the line of a markdown table whose first cell is key.
func tableRow(t *testing.T, doc, key string) string {
	t.Helper()
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| "+key+" |") {
			return line
		}
	}
	t.Fatalf("docs/results.md has no row %s", key)
	return ""
}

// docKeys returns the `quoted` names of a piece of markdown.
func docKeys(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestSimBundledHtsim: --tm htsim/NAME finds the htsim samples bundled
// with mrc, as scenario files do, from any directory.
func TestSimBundledHtsim(t *testing.T) {
	stdout, stderr, code := runMRC(t, "sim", "--tm", "htsim/alltoall_serial_16n.cm", "--transports", "mrc", "--quiet")
	if code != 0 || !strings.Contains(stdout, "mrc sim: alltoall_serial_16n") || !strings.Contains(stdout, "240/240") {
		t.Errorf("--tm htsim/alltoall_serial_16n.cm: exit %d\n%s%s", code, stdout, stderr)
	}
	if line := assertUsageError(t, "sim", "--tm", "htsim/nope.cm"); !strings.Contains(line, "htsim/nope.cm: no such file") {
		t.Errorf("--tm htsim/nope.cm: %q", line)
	}
}

// TestSimQuiet: --quiet prints the table and nothing else: no notes on
// standard error, and not the scenario's notes under the table.
func TestSimQuiet(t *testing.T) {
	const note = "head-of-line blocking" // from the incast preset's notes
	loud, _, code := runMRC(t, "sim", "--preset", "incast", "--transports", "mrc,roce-pfc", "--json", filepath.Join(t.TempDir(), "r.json"))
	if code != 0 || !strings.Contains(loud, note) {
		t.Fatalf("without --quiet: exit %d, no notes:\n%s", code, loud)
	}
	quiet, stderr, code := runMRC(t, "sim", "--preset", "incast", "--transports", "mrc,roce-pfc", "--json", filepath.Join(t.TempDir(), "r.json"), "--quiet")
	if code != 0 || stderr != "" || strings.Contains(quiet, note) || !strings.Contains(quiet, "flows completed") {
		t.Errorf("--quiet: exit %d, stderr %q, stdout:\n%s", code, stderr, quiet)
	}
}
