package report

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openmrc/mrc/sim"
)

// TestFailureColumns checks that summary.csv and failures.csv carry the
// per-QP and control-packet bypass figures.
func TestFailureColumns(t *testing.T) {
	bp := int64(30_000)
	r := &Report{Scenario: "t"}
	r.Add(&sim.Result{Transport: "mrc", BypassNs: &bp,
		BypassQP: &sim.BypassStats{QPs: 2, P50: 11_000, P99: 30_000, Max: 30_000, ReactP50: 0, ReactP99: 4_000, ReactMax: 4_000},
		Failures: []sim.FailureResult{{Kind: "link_down", Element: "a/b", BypassNs: 30_000, DataPackets: 5, QPs: 2,
			QPBypassP50Ns: 11_000, QPBypassP99Ns: 30_000, ControlBypassNs: 70_000, ControlPackets: 9}}}, false)
	dir := t.TempDir()
	if _, err := r.WriteCSV(dir); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]map[string]string{
		"summary.csv": {"bypass_ns": "30000", "bypass_qp_p50_ns": "11000", "bypass_qp_p99_ns": "30000", "bypass_qp_react_p50_ns": "0",
			"bypass_qp_react_p99_ns": "4000", "control_bypass_ns": "70000", "failed_control_packets": "9", "failed_data_packets": "5"},
		"failures.csv": {"bypass_ns": "30000", "data_packets": "5", "qps": "2", "qp_bypass_p50_ns": "11000", "qp_bypass_p99_ns": "30000",
			"control_bypass_ns": "70000", "control_packets": "9"},
	} {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) != 2 {
			t.Fatalf("%s: %d rows, %v", file, len(rows), err)
		}
		for col, v := range want {
			got := "(missing)"
			if i := slices.Index(rows[0], col); i >= 0 {
				got = rows[1][i]
			}
			if got != v {
				t.Errorf("%s: column %q is %s, want %s", file, col, got, v)
			}
		}
	}
}
