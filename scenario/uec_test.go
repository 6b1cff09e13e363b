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
// htsim's UEC transport with REPS gives, within 3%. The figures are
// htsim's, from ../shared/docs/htsim-reference.md (row u4), not ours.
func TestUECMatchesHtsim(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,024-host simulation (a few seconds)")
	}
	s, err := LoadPreset("htsim-perm")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{Transports: []string{"uec"}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), p, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.FlowsCompleted != r.Flows {
		t.Fatalf("%d of %d flows", r.FlowsCompleted, r.Flows)
	}
	for _, c := range []struct {
		name      string
		got, want float64 // µs
	}{
		{"p50", float64(r.FCT.P50) / 1e3, 189.0},
		{"p99", float64(r.FCT.P99) / 1e3, 195.5},
		{"max", float64(r.FCT.Max) / 1e3, 197.6},
	} {
		t.Logf("FCT %s: uec %.1f µs, htsim %.1f µs", c.name, c.got, c.want)
		if math.Abs(c.got/c.want-1) > 0.03 {
			t.Errorf("FCT %s %.1f µs, htsim's %.1f µs: more than 3%% apart", c.name, c.got, c.want)
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
