package scenario

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/ib"
	"github.com/openmrc/mrc/mptcp"
	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/units"
	"github.com/openmrc/mrc/vswitch"
	"go.yaml.in/yaml/v3"
)

// docExample returns the commented example of every key in
// docs/scenario.md.
func docExample(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, "## Every key")
	if i < 0 {
		t.Fatal(`docs/scenario.md has no "## Every key" section`)
	}
	doc = doc[i:]
	start := strings.Index(doc, "```yaml\n")
	end := strings.Index(doc[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no yaml block in the Every key section")
	}
	return []byte(doc[start+8 : start+8+end])
}

// typeKeys lists every key path the parser knows, as "a.b[].c".
func typeKeys(t reflect.Type, at string, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			at += "[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == durationType {
		return
	}
	for _, name := range fieldNames(t) {
		f, _ := t.FieldByNameFunc(func(n string) bool {
			sf, _ := t.FieldByName(n)
			return strings.Split(sf.Tag.Get("yaml"), ",")[0] == name
		})
		p := name
		if at != "" {
			p = at + "." + name
		}
		*out = append(*out, p)
		typeKeys(f.Type, p, out)
	}
}

// nodeKeys lists the key paths a YAML document uses, in typeKeys' form.
func nodeKeys(n *yaml.Node, at string, out map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		nodeKeys(n.Content[0], at, out)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if at != "" {
				p = at + "." + p
			}
			out[p] = true
			nodeKeys(n.Content[i+1], p, out)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			nodeKeys(c, at+"[]", out)
		}
	}
}

// TestDocExample checks that the example in docs/scenario.md parses,
// builds, and uses every key the parser knows.
func TestDocExample(t *testing.T) {
	data := docExample(t)
	s, err := Parse(data, source{file: "docs/scenario.md", dir: "../docs"}, "doc")
	if err != nil {
		t.Fatalf("the documented example does not parse: %v", err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatalf("the documented example does not build: %v", err)
	}
	if len(p.Runs) != 5 || p.Runs[1].Transport.Name != "mrc-32ev" || p.Runs[1].Transport.EV.ActivePerPlane != 32 ||
		p.Runs[2].Transport.Name != "dctcp-1ms" || p.Runs[2].Transport.TCP.MinRTO != time.Millisecond ||
		p.Runs[3].Transport.Name != "mptcp-olia" || p.Runs[3].Transport.MPTCP.CC != mptcp.OLIA || p.Runs[3].Transport.MPTCP.TCP.MinRTO != time.Millisecond ||
		p.Runs[4].Transport.Name != "ib-ar-cc" || p.Runs[4].Transport.IB.CC != ib.CCCCA {
		t.Errorf("transports: %d runs", len(p.Runs))
		for _, r := range p.Runs {
			t.Errorf("%+v", r.Transport)
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	nodeKeys(&doc, "", used)
	var known []string
	typeKeys(reflect.TypeFor[Scenario](), "", &known)
	for _, k := range known {
		// The workload is a list in the example; a single part is a
		// mapping with the same keys.
		if !used[k] && !used[strings.Replace(k, "workload.", "workload[].", 1)] {
			t.Errorf("docs/scenario.md's example does not show key %s", k)
		}
	}
	if len(known) < 80 {
		t.Errorf("only %d keys found: the walk is broken", len(known))
	}
}

func parse(t *testing.T, yml string) (*Scenario, error) {
	t.Helper()
	return Parse([]byte(yml), source{file: "x.yaml"}, "x")
}

const small = `topology: {hosts: 16, planes: 2, t0_down: 4, t0_up: 2}
workload: {kind: permutation, size: 64KiB}
`

// TestErrors checks that bad scenarios get one-line errors naming the
// file, the line and the key.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		yml, want string
	}{
		{"topology:\n  hosts: 16\n  host: 3\nworkload: {kind: permutation, size: 1MiB}\n", `x.yaml:3: unknown key "host" in topology (did you mean "hosts"?)`},
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 1MiB}\nzzz: 1\n", `x.yaml:3: unknown key "zzz" in the scenario (want one of name, description`},
		{"topology:\n  hosts: abc\n", `x.yaml:2: topology.hosts: want an integer, got "abc"`},
		{"topology:\n  hosts: 16\n  host_rate: 100\n", `x.yaml:3: topology.host_rate: "100": a rate needs a unit`},
		{small + "failures:\n  - kind: link_down\n    element: random:t0-t1\n    at: 5\n", `x.yaml:6: failures[0].at: "5": a duration needs a unit`},
		{small + "duration: -1s\n", `x.yaml:3: duration: "-1s": a duration cannot be negative`},
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 2M}\n", `x.yaml:2: workload.size: "2M": say 2MiB`},
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 12XB}\n", `x.yaml:2: workload.size: "12XB" is not a size`},
		{"topology: [1, 2]\n", `x.yaml:1: topology: want a mapping of keys, got a list`},
		{"workload: {kind: permutation\n", `x.yaml:1: did not find expected ',' or '}'`},
		{"", `x.yaml: empty scenario`},
		{"- a\n- b\n", `x.yaml:1: want a YAML mapping of keys`},
		{"transports:\n  - name: x\n    ev: {actve_per_plane: 3}\n", `x.yaml:3: unknown key "actve_per_plane" in transports[0].ev (did you mean "active_per_plane"?)`},
		{"workload:\n  - kind: flows\n    flows:\n      - {src: 0, dst: 1, size: 1MiB, strt: 3us}\n", `x.yaml:4: unknown key "strt" in workload[0].flows[0]`},
		{small + "seed: -3\n", `x.yaml:3: seed: want a non-negative integer, got "-3"`},
		{small + "outputs: {flows: maybe}\n", `x.yaml:3: outputs.flows: want true or false, got "maybe"`},
	} {
		_, err := parse(t, c.yml)
		checkErr(t, c.yml, err, c.want)
	}
}

func checkErr(t *testing.T, yml string, err error, want string) {
	t.Helper()
	var se *Error
	switch {
	case err == nil:
		t.Errorf("%q: no error, want %q", yml, want)
	case !errors.As(err, &se):
		t.Errorf("%q: error %T %v is not a *scenario.Error", yml, err, err)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%q:\n got %q\nwant %q", yml, err.Error(), want)
	case strings.Contains(err.Error(), "\n"):
		t.Errorf("%q: error is more than one line: %q", yml, err.Error())
	}
}

// TestBuildErrors checks the semantic checks, with the line of the key.
func TestBuildErrors(t *testing.T) {
	for _, c := range []struct {
		yml, want string
	}{
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\n", `x.yaml:1: workload: required`},
		{"topology: {t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 1MiB}\n", `x.yaml:1: topology.hosts: required`},
		{"topology:\n  hosts: 10\n  t0_down: 4\n  t0_up: 2\nworkload: {kind: permutation, size: 1MiB}\n", `x.yaml:1: topology: hosts 10 not divisible by t0_down 4`},
		{"topology:\n  hosts: 16\n  t0_down: 4\n  t0_up: 2\n  host_rate: 0.5T\n  kind: ring\nworkload: {kind: permutation, size: 1MiB}\n", `x.yaml:6: topology.kind: unknown kind "ring"`},
		{small + "failures:\n  - kind: link_down\n    element: t0-p0-9/t1-p0-0\n", `x.yaml:5: failures[0].element:`},
		{small + "failures:\n  - kind: link_dwn\n    element: random:t0-t1\n", `x.yaml:4: failures[0].kind: unknown kind "link_dwn"`},
		{small + "failures:\n  - kind: link_flap\n    element: random:t0-t1\n", `x.yaml:4: failures[0]: a link_flap needs until`},
		{small + "failures:\n  - kind: switch_reboot\n    element: random:t1\n", `x.yaml:4: failures[0].until: required: a switch_reboot comes back`},
		{small + "failures:\n  - kind: lossy_link\n    element: random:t0-t1\n    loss: 2\n", `x.yaml:6: failures[0].loss: 2: a lossy_link needs loss`},
		{small + "failures:\n  - kind: link_down\n    element: random:t7\n", `unknown selector "random:t7"`},
		{small + "failures:\n  - {kind: link_down, element: random:t0-t1, at: 20us, until: 10us}\n", `failures[0].until: 10µs is not after at (20µs)`},
		{small + "transports: [mrc, nope]\n", `x.yaml:3: transports[1]: unknown transport "nope"`},
		{small + "transports:\n  - {name: x, base: roce, ev: {active_per_plane: 4}}\n", `transports[0].ev: roce does not run the MRC core`},
		{small + "transports:\n  - {name: x, base: uec, ev: {reps: true, mixed: true}}\n", `x.yaml:4: transports[0].ev.mixed: true with reps: an EV profile sprays by REPS or by the mixed mode, not both`},
		{small + "transports:\n  - {name: x, base: tcp, ev: {active_per_plane: 4}}\n", `x.yaml:4: transports[0].ev: tcp does not run the MRC core: it has no EVs (ev applies to mrc, oblivious, uec, mrc-1ev-ecmp, mrc-ecmp)`},
		{small + "transports:\n  - {name: x, base: mrc, tcp: {min_rto: 1ms}}\n", `x.yaml:4: transports[0].tcp: mrc does not run TCP (tcp applies to tcp, dctcp)`},
		{small + "transports:\n  - {name: x, base: dctcp, tcp: {min_rto: 5s}}\n", `transports[0].tcp: RTO bounds: min 5s, initial 1s`},
		{small + "transports:\n  - {name: x, base: tcp, tcp: {delack: 1s}}\n", `x.yaml:4: transports[0].tcp: delayed-ACK timeout 1s, want (0, 500ms] (RFC 5681 §4.2)`},
		{small + "transports:\n  - {name: x, base: mptcp, mptcp: {delack: -1ms}}\n", `x.yaml:4: transports[0].mptcp.delack: "-1ms": a duration cannot be negative`},
		{small + "transports:\n  - {name: x, base: tcp, tcp: {init_cwnd: -1}}\n", `transports[0].tcp.init_cwnd: -1: want a positive number`},
		{small + "transports:\n  - {name: x, base: tcp, tcp: {min_rot: 1ms}}\n", `unknown key "min_rot" in transports[0].tcp (did you mean "min_rto"?)`},
		{small + "transports: [tcp, dctcpp]\n", `x.yaml:3: transports[1]: unknown transport "dctcpp" (built-in: mrc, oblivious, uec, mrc-1ev-ecmp, mrc-ecmp, roce, roce-pfc, tcp, dctcp, mptcp, ib, ib-ar)`},
		{small + "transports:\n  - {name: x, base: ib, ev: {active_per_plane: 4}}\n", `x.yaml:4: transports[0].ev: ib does not run the MRC core: it has no EVs (ev applies to mrc, oblivious, uec, mrc-1ev-ecmp, mrc-ecmp)`},
		{small + "transports:\n  - {name: x, base: mrc, ib: {cc: fecn}}\n", `x.yaml:4: transports[0].ib: mrc does not run InfiniBand (ib applies to ib, ib-ar)`},
		{small + "transports:\n  - {name: x, base: ib, tcp: {min_rto: 1ms}}\n", `x.yaml:4: transports[0].tcp: ib does not run TCP (tcp applies to tcp, dctcp)`},
		{small + "transports:\n  - name: x\n    base: ib\n    ib: {cc: dcqcn}\n", `x.yaml:6: transports[0].ib.cc: unknown congestion control "dcqcn" (want none or fecn)`},
		{small + "transports:\n  - {name: x, base: ib-ar, ib: {routing: ecmp}}\n", `transports[0].ib.routing: unknown routing "ecmp" (want static or adaptive)`},
		{small + "transports:\n  - {name: x, base: ib, ib: {ccti_timer: 5us}}\n", `transports[0].ib.ccti_timer: applies to congestion control fecn (cc: fecn)`},
		{small + "transports:\n  - {name: x, base: ib, ib: {cc: fecn, ccti_timer: 100ms}}\n", `x.yaml:4: transports[0].ib: CCTI timer 100ms, want 1.024µs..67.1ms`},
		{small + "transports:\n  - {name: x, base: ib, ib: {buffer: 1KiB}}\n", `transports[0].ib.buffer: 1024 bytes holds no packet of the 4096-byte MTU`},
		{small + "transports:\n  - {name: x, base: ib, ib: {timeot: 8}}\n", `unknown key "timeot" in transports[0].ib (did you mean "timeout"?)`},
		{small + "transports:\n  - {name: x, base: ib-ar, lossless: true}\n", `transports[0].lossless: ib-ar's links are lossless by their credits: trimming and PFC do not apply`},
		{small + "transports:\n  - {name: x, base: mptcp, ev: {active_per_plane: 4}}\n", `x.yaml:4: transports[0].ev: mptcp does not run the MRC core: it has no EVs (ev applies to mrc, oblivious, uec, mrc-1ev-ecmp, mrc-ecmp)`},
		{small + "transports:\n  - {name: x, base: mptcp, tcp: {min_rto: 1ms}}\n", `x.yaml:4: transports[0].tcp: mptcp does not run TCP (tcp applies to tcp, dctcp; give mptcp's TCP parameters in its mptcp: block)`},
		{small + "transports:\n  - {name: x, base: tcp, mptcp: {subflows: 4}}\n", `x.yaml:4: transports[0].mptcp: tcp does not run MPTCP (mptcp applies to mptcp)`},
		{small + "transports:\n  - {name: x, base: mptcp, mptcp: {cc: cubic}}\n", `x.yaml:4: transports[0].mptcp.cc: unknown congestion control "cubic" (want lia, olia, uncoupled)`},
		{small + "transports:\n  - {name: x, base: mptcp, mptcp: {subflows: 100}}\n", `x.yaml:4: transports[0].mptcp: subflows 100, want 1..64`},
		{small + "transports:\n  - {name: x, base: mptcp, mptcp: {min_rot: 1ms}}\n", `unknown key "min_rot" in transports[0].mptcp (did you mean "min_rto"?)`},
		{small + "transports:\n  - {name: x, base: mptcp, mptcp: {init_cwnd: -2}}\n", `transports[0].mptcp.init_cwnd: -2: want a positive number`},
		{small + "transports:\n  - {name: x, base: mptcp, fabric: srv6}\n", `transports[0].fabric: srv6 needs a transport that runs the MRC core`},
		{small + "transports:\n  - {name: x, base: roce, fabric: srv6}\n", `transports[0].fabric: srv6 needs a transport that runs the MRC core`},
		{small + "transports: [mrc, mrc]\n", `two transports are called "mrc"`},
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload: {kind: incast, size: 1MiB, senders: 16}\n", `x.yaml:2: workload.senders: 16: want 1..15`},
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 1MiB, chunks: 3}\n", `workload.chunks: not used with kind permutation`},
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation}\n", `workload.size: required`},
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 1MiB, hosts: 20}\n", `workload.hosts: hosts 0..19, but the fabric has 16`},
		{"topology: {hosts: 16, t0_down: 4, t0_up: 2}\nworkload:\n  kind: flows\n  flows: [{src: 0, dst: 1, size: 1MiB, after: 9}]\n", `workload.flows[0].after: no flow has ID 9`},
		{"topology: {file: nope.topo}\nworkload: {kind: permutation, size: 1MiB}\n", `x.yaml:1: topology.file: nope.topo: no such file or directory`},
		{"topology: {file: nope.topo, hosts: 3}\nworkload: {kind: permutation, size: 1MiB}\n", `topology.hosts: not used with kind htsim`},
		{small + "sim: {mtu: 100}\n", `x.yaml:3: sim.mtu: 100: want 256..9000`},
		{small + "sim: {reconvergence: 1ms, local_repair: 2ms}\n", `sim.local_repair: 2ms is longer than reconvergence`},
		{small + "sim: {local_repair: 2s}\n", `sim.local_repair: 2s is longer than reconvergence`},
		{small + "queues: {ecn_min: 10KiB, ecn_max: 5KiB}\n", `queues.ecn_min: 10240 is above ecn_max 5120`},
		{"topology: {hosts: 16, planes: 17, t0_down: 4, t0_up: 2}\nworkload: {kind: permutation, size: 1MiB}\n", `topology.planes: 17: a NIC has at most 16 ports`},
	} {
		s, err := parse(t, c.yml)
		if err == nil {
			_, err = s.Build(Overrides{})
		}
		checkErr(t, c.yml, err, c.want)
	}
}

// TestHtsimFileErrors checks that a malformed htsim file names its line.
func TestHtsimFileErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/bad.cm", []byte("Nodes 16\nConnections 1\n0->1 size banana\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yml := "topology: {hosts: 16, t0_down: 4, t0_up: 4}\nworkload: {kind: htsim, file: bad.cm}\n"
	s, err := Parse([]byte(yml), source{file: dir + "/x.yaml", dir: dir}, "x")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Build(Overrides{})
	checkErr(t, yml, err, dir+"/bad.cm:3:")
}

// TestPresets checks that every preset parses and builds (the largest
// only parses: building it takes a while).
func TestPresets(t *testing.T) {
	ps := Presets()
	if len(ps) < 6 || ps[0].Name != DefaultPreset {
		t.Fatalf("presets: %+v", ps)
	}
	names := map[string]bool{}
	for _, p := range ps {
		names[p.Name] = true
		s, err := LoadPreset(p.Name)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		if s.Description == "" || s.Notes == "" {
			t.Errorf("%s: no description or notes", p.Name)
		}
		if p.Slow {
			continue
		}
		if _, err := s.Build(Overrides{}); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	for _, want := range []string{"default", "htsim-perm", "incast", "flap-storm", "big"} {
		if !names[want] {
			t.Errorf("no preset %q", want)
		}
	}
	if _, err := LoadPreset("nope"); err == nil || !strings.Contains(err.Error(), "default") {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestUnits(t *testing.T) {
	for s, want := range map[string]uint64{"4096": 4096, "256KiB": 256 << 10, "2MB": 2e6, "1.5MiB": 3 << 19, "1GiB": 1 << 30, "0": 0, "12 kB": 12000} {
		if got, err := units.ParseSize(s); err != nil || got != want {
			t.Errorf("size %q: %d, %v; want %d", s, got, err, want)
		}
	}
	for s, want := range map[string]int64{"100G": 100e9, "400Gb/s": 400e9, "800Gbps": 800e9, "1.6T": 1.6e12, "25e9b/s": 25e9} {
		if got, err := units.ParseRate(s); err != nil || got != want {
			t.Errorf("rate %q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"100", "fast", "-5G", "0G"} {
		if _, err := units.ParseRate(bad); err == nil {
			t.Errorf("rate %q accepted", bad)
		}
	}
	for _, bad := range []string{"1.5B", "x", "-1"} {
		if _, err := units.ParseSize(bad); err == nil {
			t.Errorf("size %q accepted", bad)
		}
	}
}

// TestWorkloadParts checks that parts are merged with tags, renumbered
// IDs, starts and separate triggers.
func TestWorkloadParts(t *testing.T) {
	yml := `topology: {hosts: 16, t0_down: 4, t0_up: 4}
workload:
  - {kind: permutation, size: 1MiB, tag: perm}
  - {kind: incast, size: 1MiB, hosts: 8, offset: 8, start: 5us, senders: 4, victim: {src: 6, dst: 1}}
  - kind: flows
    flows:
      - {src: 0, dst: 1, size: 4KiB}
      - {src: 1, dst: 2, size: 4KiB, after: 1}
  - {kind: htsim, file: presets/htsim/alltoall_serial_16n.cm}
`
	s, err := Parse([]byte(yml), source{file: "x.yaml", dir: "."}, "x")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	wl := p.Workload
	if want := 16 + 5 + 2 + 240; len(wl.Flows) != want {
		t.Fatalf("%d flows, want %d", len(wl.Flows), want)
	}
	for i, f := range wl.Flows {
		if f.ID != i+1 {
			t.Fatalf("flow %d has ID %d", i, f.ID)
		}
	}
	in := wl.Flows[16]
	if in.Tag != "incast" || in.Src != 9 || in.Dst != 8 || in.Start != 5e6 {
		t.Errorf("incast flow: %+v", in)
	}
	if v := wl.Flows[20]; v.Tag != "victim" || v.Src != 14 || v.Dst != 9 {
		t.Errorf("victim: %+v", v)
	}
	a, b := wl.Flows[21], wl.Flows[22]
	if a.SendDoneTrigger == 0 || b.Trigger != a.SendDoneTrigger {
		t.Errorf("after: %+v %+v", a, b)
	}
	ids := map[int]bool{}
	for _, tr := range wl.Triggers {
		if ids[tr.ID] {
			t.Errorf("trigger ID %d twice", tr.ID)
		}
		ids[tr.ID] = true
	}
	if !slices.ContainsFunc(wl.Flows, func(f workload.Flow) bool { return f.Tag == "htsim" && f.Trigger > 1 }) {
		t.Error("htsim flows lost their triggers")
	}
}

// TestRunSmall runs a small scenario through Run with every output, and
// checks the report.
func TestRunSmall(t *testing.T) {
	s, err := parse(t, small+"transports: [mrc, roce]\nfailures: [{kind: link_down, element: random:t0-t1, at: 3us}]\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rep, err := Run(context.Background(), p, RunOptions{Pcap: dir + "/c.pcapng", Trace: dir + "/t.jsonl", Capture: []string{"h0/p0", "t1-p0-0:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Interrupted || rep.Results[0].FlowsCompleted != 16 || rep.Results[0].BypassNs == nil {
		t.Fatalf("report: %+v", rep)
	}
	for _, f := range []string{"c-mrc.pcapng", "c-roce.pcapng", "t-mrc.jsonl", "t-roce.jsonl"} {
		if fi, err := os.Stat(dir + "/" + f); err != nil || fi.Size() < 1000 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := Run(context.Background(), p, RunOptions{Pcap: dir + "/c.pcapng", Capture: []string{"h99/p0"}}); err == nil || !strings.Contains(err.Error(), "h99") {
		t.Errorf("bad capture point: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err = Run(ctx, p, RunOptions{})
	if err != nil || !rep.Interrupted || len(rep.Results) != 0 {
		t.Errorf("cancelled: %v %+v", err, rep)
	}
}

// TestExamples checks that every file in examples/ parses and builds.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if _, err := s.Build(Overrides{}); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// TestDescribeFailureGrammar: the failure lines of the table's header
// agree in number: one element drops, several drop.
func TestDescribeFailureGrammar(t *testing.T) {
	us := Duration(time.Microsecond)
	for _, c := range []struct {
		f    Failure
		want string
	}{
		{Failure{Kind: "switch_blackhole", Element: "random:t1", At: 50 * us}, "a random T1 switch silently drops everything (links and routes up) from 50 µs"},
		{Failure{Kind: "switch_blackhole", Element: "random:t1", Count: 2, At: 50 * us}, "2 random T1 switches silently drop everything"},
		{Failure{Kind: "switch_blackhole", Element: "t1-p0-3", At: 50 * us}, "t1-p0-3 silently drops everything"},
		{Failure{Kind: "lossy_link", Element: "random:t1-t2", Count: 4, Loss: 0.02}, "4 random T1–T2 links drop 2% of packets"},
		{Failure{Kind: "lossy_link", Element: "t0-p0-1/t1-p0-2", Loss: 0.02}, "t0-p0-1/t1-p0-2 drops 2% of packets"},
		{Failure{Kind: "link_flap", Element: "random:t0-t1", FlapRate: 100, Until: 100 * us}, "a random T0–T1 link flaps 100 times/s"},
		{Failure{Kind: "link_flap", Element: "random:t0-t1", Count: 16, FlapRate: 100, Until: 100 * us}, "16 random T0–T1 links flap 100 times/s"},
	} {
		if got := describeFailure(c.f); !strings.HasPrefix(got, c.want) {
			t.Errorf("%+v:\n got %q\nwant %q…", c.f, got, c.want)
		}
	}
}

// TestIBParams: a variant's ib: block reaches the HCA's configuration, the
// fabric's routing, credits and rerouting, keeping what it does not set.
func TestIBParams(t *testing.T) {
	s, err := parse(t, small+"transports:\n  - {name: a, base: ib, ib: {routing: adaptive, cc: fecn, ccti_timer: 20us, fecn_threshold: 8KiB, buffer: 64KiB, timeout: 10, retry_count: 0}}\n  - ib-ar\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	a, ar := p.Runs[0].Transport, p.Runs[1].Transport
	if c := a.IB; a.Name != "a" || c == nil || a.Fabric != vswitch.ModeAdaptive || c.CC != ib.CCCCA || c.CCA.CCTITimer != 20*time.Microsecond ||
		c.CCA.Threshold != 8<<10 || a.CreditBuffer != 64<<10 || c.TimeoutExp != 10 || c.RetryCount != -1 || c.ReorderWindow == 0 ||
		!a.Credits || !a.ECNK || a.Reroute != sim.DefaultReroute {
		t.Errorf("a: %+v, IB %+v", a, a.IB)
	}
	if c := ar.IB; c == nil || ar.Fabric != vswitch.ModeAdaptive || c.CC != ib.CCNone || ar.ECNK || ar.CreditBuffer != 0 {
		t.Errorf("ib-ar: %+v, IB %+v", ar, c)
	}
}

// TestTCPParams: a variant's tcp: block reaches the TCP configuration it
// runs with, keeping the base's variant and switch features, and
// queues.ecn_k the switches' threshold.
func TestTCPParams(t *testing.T) {
	s, err := parse(t, small+"queues: {ecn_k: 30KiB}\ntransports:\n  - {name: d1, base: dctcp, tcp: {min_rto: 1ms, init_cwnd: 4, rack: false, delayed_ack: false, delack: 4ms}}\n  - tcp\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	d, nr := p.Runs[0], p.Runs[1]
	if c := d.Transport.TCP; d.Transport.Name != "d1" || c == nil || c.MinRTO != time.Millisecond || c.InitCwnd != 4 || c.Variant != tcp.DCTCP || !c.DisableRACK ||
		!c.DisableDelayedACK || c.DelAck != 4*time.Millisecond ||
		!d.Transport.ECNK || !d.Transport.ECNLastHop {
		t.Errorf("d1: %+v, TCP %+v", d.Transport, d.Transport.TCP)
	}
	if c := nr.Transport.TCP; c == nil || c.MinRTO != 0 || c.Variant != tcp.NewReno || c.DisableRACK || c.DisableDelayedACK || c.DelAck != 0 || nr.Transport.ECNK {
		t.Errorf("tcp: %+v, TCP %+v", nr.Transport, c)
	}
	if d.Queue.ECNK != 30<<10 {
		t.Errorf("queue ECN K %d, want 30 KiB", d.Queue.ECNK)
	}
}

// TestMPTCPParams: a variant's mptcp: block reaches the MPTCP
// configuration, its TCP keys the subflows', and the built-in keeps the
// defaults.
func TestMPTCPParams(t *testing.T) {
	s, err := parse(t, small+"transports:\n  - {name: m4, base: mptcp, mptcp: {subflows: 4, cc: uncoupled, min_rto: 1ms, rack: false, delack: 4ms}}\n  - mptcp\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	m4, def := p.Runs[0].Transport, p.Runs[1].Transport
	if c := m4.MPTCP; m4.Name != "m4" || c == nil || c.Subflows != 4 || c.CC != mptcp.Uncoupled || c.TCP.MinRTO != time.Millisecond || !c.TCP.DisableRACK ||
		c.TCP.DelAck != 4*time.Millisecond || c.TCP.DisableDelayedACK {
		t.Errorf("m4: %+v, MPTCP %+v", m4, c)
	}
	if c := def.MPTCP; c == nil || c.Subflows != 0 || c.CC != mptcp.LIA || c.TCP.MinRTO != 0 || def.TCP != nil {
		t.Errorf("mptcp: %+v, MPTCP %+v", def, c)
	}
}

// TestTrimTo: queues.trim_to reaches every run's queue configuration.
func TestTrimTo(t *testing.T) {
	s, err := parse(t, small+"queues: {trim_to: 238B}\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		if r.Queue.TrimTo != 238 {
			t.Errorf("%s: trim to %d bytes, want 238", r.Transport.Name, r.Queue.TrimTo)
		}
	}
}
