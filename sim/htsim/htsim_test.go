package htsim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmrc/mrc/sim/workload"
)

// The samples bundled with mrc (scenario/presets/htsim), or from the
// shared data directory.
var bundled = filepath.Join("..", "..", "scenario", "presets", "htsim")

func sample(t *testing.T, name string) string {
	p := filepath.Join(bundled, name)
	if _, err := os.Stat(p); err != nil {
		p = filepath.Join("/work/shared/data/htsim", name)
		if _, err := os.Stat(p); err != nil {
			t.Skipf("htsim sample %s not available", name)
		}
	}
	return p
}

func TestReadSamples(t *testing.T) {
	w, nodes, err := ReadCMFile(sample(t, "perm_1024n_1024c_0u_2000000b.cm"))
	if err != nil {
		t.Fatal(err)
	}
	if nodes != 1024 || len(w.Flows) != 1024 || w.Flows[0].Src != 334 || w.Flows[0].Dst != 395 || w.Flows[0].Size != 2_000_000 {
		t.Errorf("permutation: %d nodes, %d flows, first %+v", nodes, len(w.Flows), w.Flows[0])
	}
	w, _, err = ReadCMFile(sample(t, "alltoall_serial_16n.cm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Flows) != 240 || len(w.Triggers) != 224 || w.Flows[1].Trigger != 1 || w.Flows[0].SendDoneTrigger != 1 {
		t.Errorf("all-to-all: %d flows, %d triggers, %+v", len(w.Flows), len(w.Triggers), w.Flows[:2])
	}
	if _, _, err := ReadCMFile(sample(t, "incast_128.cm")); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadTopoFile(sample(t, "leaf_spine_1024.topo"))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := ls.Build(1)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Hosts != 1024 || len(tp.Switches) != 64 || tp.HostRate() != 100e9 {
		t.Errorf("leaf-spine: %d hosts, %d switches", tp.Hosts, len(tp.Switches))
	}
	ft, err := ReadTopoFile(sample(t, "fat_tree_1024.topo"))
	if err != nil {
		t.Fatal(err)
	}
	tp, err = ft.Build(1)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Kind != "clos3" || len(tp.Switches) != 128+128+64 {
		t.Errorf("fat tree: %s with %d switches", tp.Kind, len(tp.Switches))
	}
	if mp, err := ls.Build(8); err != nil || mp.Planes != 8 {
		t.Errorf("8-plane leaf-spine: %v", err)
	}
}

func TestCMErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		text string
		line int
		want string
	}{
		{"Nodes 4\nConnections 1\n0->1 size x\n", 3, "non-negative integer"},
		{"Nodes 4\nConnections 1\n0->9 size 10\n", 3, "nodes are 0..3"},
		{"Nodes 4\nConnections 1\n\n# comment\n1->1 size 10\n", 5, "itself"},
		{"Nodes 4\nConnections 1\n0->1 size 10 colour 3\n", 3, "unknown flow attribute"},
		{"Nodes 4\nConnections 1\n0->1 id 1\n", 3, "no size"},
		{"Nodes 4\nConnections 1\nTriggers 1\n0->1 size 1\ntrigger id 1 sometimes\n", 5, "oneshot"},
		{"Nodes 4\nConnections 1\nTriggers 1\n0->1 size 1\ntrigger id 1 barrier\n", 5, "count"},
		{"Nodes 4\nConnections 2\n0->1 size 1 id 3\n1->2 size 1 id 3\n", 4, "already used on line 3"},
		{"Nodes 4\nConnections 2\n0->1 size 1\n", 3, "Connections says 2"},
		{"0->1 size 1\n", 1, "before the Nodes"},
		{"Nodes four\n", 1, "not a count"},
		{"Nodes 4\nbogus line\n", 2, "unexpected"},
		{"Nodes 4\nFailures 2\n", 2, "failure lines"},
	} {
		_, _, err := ReadCM("x.cm", strings.NewReader(tc.text))
		var pe *Error
		if !errors.As(err, &pe) || pe.Line != tc.line || !strings.Contains(err.Error(), tc.want) || pe.File != "x.cm" {
			t.Errorf("%q: %v, want x.cm:%d: …%s…", tc.text, err, tc.line, tc.want)
		}
	}
	// A trigger naming an undefined trigger is caught as a whole-file error.
	if _, _, err := ReadCM("y.cm", strings.NewReader("Nodes 4\nConnections 1\n0->1 size 1 trigger 4\n")); err == nil ||
		!strings.Contains(err.Error(), "y.cm") {
		t.Errorf("undefined trigger: %v", err)
	}
	w, _, err := ReadCM("ok.cm", strings.NewReader("Nodes 3\nConnections 1\nTriggers 1\n0->2 id 9 start 5000 size 64 prio 1 recv_done_trigger 7\ntrigger id 7 multishot\n"))
	if err != nil || w.Flows[0] != (workload.Flow{ID: 9, Src: 0, Dst: 2, Size: 64, Start: 5000, RecvDoneTrigger: 7}) {
		t.Errorf("%+v %v", w, err)
	}
}

func TestTopoErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		text string
		line int
		want string
	}{
		{"Nodes 16\nTiers 4\n", 2, "2 and 3 tiers"},
		{"Nodes 16\nTiers 2\nTier 0\nRadix_Down x\n", 4, "integer"},
		{"Nodes 16\nTiers 2\nTier 5\n", 3, "0..1"},
		{"Nodes 16\nRadix_Down 4\n", 2, "outside a Tier"},
		{"Nodes 16\nTiers 2\nTier 0\nColour 4\n", 4, "unknown key"},
		{"Nodes 16\nTiers 2\nTier 0\nBundle 2\n", 4, "parallel links"},
		{"Nodes 16\nTiers 2\nTier 0\nDownlink_speed_Gbps -1\n", 4, "positive speed"},
		{"Nodes 16\nTiers 2\nTier 0\nRadix_Down 4 5\n", 4, "Key value"},
	} {
		_, err := ReadTopo("t.topo", strings.NewReader(tc.text))
		var pe *Error
		if !errors.As(err, &pe) || pe.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want t.topo:%d: …%s…", tc.text, err, tc.line, tc.want)
		}
	}
	// Whole-file problems.
	f, err := ReadTopo("t.topo", strings.NewReader("Nodes 16\nTiers 2\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 4\nRadix_Up 4\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Build(1); err == nil || !strings.Contains(err.Error(), "Radix_Down 3") {
		t.Errorf("inconsistent radix: %v", err)
	}
	if _, err := ReadTopo("t.topo", strings.NewReader("Nodes 16\nTiers 2\nTier 0\nRadix_Down 4\n")); err == nil ||
		!strings.Contains(err.Error(), "Downlink_speed_Gbps") {
		t.Errorf("missing speed: %v", err)
	}
}
