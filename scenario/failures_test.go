package scenario

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/report"
)

// TestBlackholePresetRoCE runs the blackhole preset and checks its RoCE
// row: everything the black hole swallowed from RoCE (which sends no
// probes) counts as traffic into the failure, data or ACKs, so the
// bypass time is not 0 and the table says so.
func TestBlackholePresetRoCE(t *testing.T) {
	s, err := LoadPreset("blackhole")
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
	var roce *report.Result
	for i := range rep.Results {
		if x := &rep.Results[i]; x.Transport == "roce-pfc" {
			roce = x
		}
	}
	if roce == nil || len(roce.Failures) != 1 {
		t.Fatalf("no roce-pfc result with one failure: %+v", rep.Results)
	}
	f := roce.Failures[0]
	t.Logf("roce-pfc: %+v, drops %v, QP errors %d", f, roce.Drops, roce.QPErrors)
	if got, want := f.DataPackets+f.ControlPackets, roce.Drops["blackhole"]; got != want || want == 0 {
		t.Errorf("%d data + %d control packets into the black hole, it dropped %d", f.DataPackets, f.ControlPackets, want)
	}
	if f.DataPackets > 0 && f.BypassNs <= 0 || f.ControlPackets > 0 && f.ControlBypassNs <= 0 {
		t.Errorf("bypass %d ns (data), %d ns (ACKs): traffic went into the black hole", f.BypassNs, f.ControlBypassNs)
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^ACK pkts into failures +(.*)$`).FindStringSubmatch(b.String())
	if row == nil || !strings.HasSuffix(strings.TrimSpace(row[1]), report.Count(f.ControlPackets)) || f.ControlPackets == 0 {
		t.Errorf("the table's ACK row %q, want roce-pfc's %d ACKs:\n%s", row, f.ControlPackets, b.String())
	}
}

// TestLocalRepairOption checks that sim.local_repair reaches the
// simulator's configuration.
func TestLocalRepairOption(t *testing.T) {
	s, err := parse(t, small+"sim: {local_repair: 300us}\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Runs {
		if c.LocalRepair != 300*time.Microsecond {
			t.Errorf("%s: local repair %v, want 300µs", c.Transport.Name, c.LocalRepair)
		}
	}
}

// TestDefaultNotes checks that the default scenario's note says what the
// comparison leaves to RoCE's single-plane pinning, what local repair
// does, and how the per-QP bypass relates to the worst case.
func TestDefaultNotes(t *testing.T) {
	s, err := LoadPreset(DefaultPreset)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pins each QP to one plane", "before the failures", "sim.local_repair", "reconverge",
		"Per QP", "a few tens of microseconds", "reaction", "Left out"} {
		if !strings.Contains(strings.Join(strings.Fields(s.Notes), " "), want) {
			t.Errorf("the default notes do not say %q:\n%s", want, s.Notes)
		}
	}
}
