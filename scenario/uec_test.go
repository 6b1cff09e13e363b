package scenario

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/openmrc/mrc/sim"
)

// TestUECMatchesHtsim: the uec baseline on htsim's own permutation
// (perm_1024n_1024c_0u_2000000b.cm on leaf_spine_1024.topo) gives the FCTs
// htsim's UEC transport gives, within 3%, with each of htsim's two
// sprayers. The figures are htsim's, not ours: with REPS from
// ../shared/docs/htsim-reference.md (row u4); with htsim's default "mixed"
// load balancing from htsim_uec @40ccb05 run on this input
// (-load_balancing_algo mixed -paths 128 -sender_cc_only; docs/uec.md).
func TestUECMatchesHtsim(t *testing.T) {
	if testing.Short() {
		t.Skip("1,024-host simulations (a few seconds each)")
	}
	for _, c := range []struct {
		transport     string
		p50, p99, max float64 // htsim's, µs
	}{
		{"uec", 189.0, 195.5, 197.6},
		{"{name: uec-mixed, base: uec, ev: {mixed: true}}", 186.2, 191.9, 194.3},
	} {
		yml := "topology: {file: htsim/leaf_spine_1024.topo}\n" +
			"workload: {kind: htsim, file: htsim/perm_1024n_1024c_0u_2000000b.cm}\n" +
			"transports: [" + c.transport + "]\n"
		s, err := Parse([]byte(yml), source{file: "test", dir: "presets", fsys: presetFS}, "uec-htsim")
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Build(Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Results[0]
		if r.FlowsCompleted != r.Flows {
			t.Fatalf("%s: %d of %d flows", r.Transport, r.FlowsCompleted, r.Flows)
		}
		for _, f := range []struct {
			name      string
			got, want float64 // µs
		}{
			{"p50", float64(r.FCT.P50) / 1e3, c.p50},
			{"p99", float64(r.FCT.P99) / 1e3, c.p99},
			{"max", float64(r.FCT.Max) / 1e3, c.max},
		} {
			t.Logf("%s FCT %s: %.1f µs, htsim %.1f µs", r.Transport, f.name, f.got, f.want)
			if math.Abs(f.got/f.want-1) > 0.03 {
				t.Errorf("%s FCT %s %.1f µs, htsim's %.1f µs: more than 3%% apart", r.Transport, f.name, f.got, f.want)
			}
		}
	}
}

// --transports all names every built-in transport, in order, unless the
// scenario defines a transport of its own called all.
func TestTransportsAll(t *testing.T) {
	s, err := LoadPreset("default")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{Transports: []string{"all"}})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, r := range p.Runs {
		got = append(got, r.Transport.Name)
	}
	for _, tr := range sim.Transports() {
		want = append(want, tr.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("--transports all: %v, want %v", got, want)
	}
}
