package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/sim/job"
)

// A training job's results reach the table, the CSV files and a step
// plot; scale-up collectives stay out of the fabric list.
func TestJobOutputs(t *testing.T) {
	jr := func(step int64, bus float64) *job.Result {
		return &job.Result{Ranks: 8, Steps: 2, StepsDone: 2, StepNs: []int64{step, step + 1000}, StepMeanNs: float64(step) + 500, StepP99Ns: step + 1000,
			ComputeFraction: 0.25, ExposedCommFraction: 0.5, GPUIdleFraction: 0.75,
			Collectives: []job.CollectiveResult{
				{Name: "dp", Op: "all_reduce", Ranks: 8, Bytes: 64 << 20, Count: 2, MeanNs: 9e6, AlgBWGbps: bus / 1.75, BusBWGbps: bus},
				{Name: "tp", Op: "all_gather", Ranks: 8, Bytes: 1 << 20, ScaleUp: true, Count: 2, MeanNs: 1e4},
			},
			Straggler: &job.Straggler{Step: 1, Rank: 5, Longest: "dp all_reduce", LongestNs: 9e6}}
	}
	r := &Report{Scenario: "t", Seed: 1}
	r.Add(&sim.Result{Transport: "mrc", Job: jr(10_000_000, 95.1)}, false)
	r.Add(&sim.Result{Transport: "roce", Job: jr(20_000_000, 47.5)}, false)
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	squeeze := regexp.MustCompile(` +`)
	out := squeeze.ReplaceAllString(b.String(), " ")
	for _, want := range []string{"steps done 2/2 2/2", "step time mean / p99 10 ms / 10 ms 20 ms / 20 ms", "compute / exposed comm 25% / 50%",
		"GPU idle 75% 75%", "slowest step held up by rank 5: dp all_reduce (9 ms)", "dp (all_reduce, 8 ranks, 64 MiB)", "mrc 9 ms, 95.1 Gb/s (×2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tp (all_gather") {
		t.Errorf("a scale-up collective is listed over the fabric:\n%s", out)
	}
	dir := t.TempDir()
	files, err := r.WriteCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	csvs := strings.Join(files, " ")
	for _, f := range []string{"steps.csv", "collectives.csv"} {
		if !strings.Contains(csvs, f) {
			t.Errorf("no %s in %v", f, files)
		}
	}
	steps, _ := os.ReadFile(filepath.Join(dir, "steps.csv"))
	if want := "transport,step,step_ns\nmrc,0,10000000\nmrc,1,10001000\nroce,0,20000000\nroce,1,20001000\n"; string(steps) != want {
		t.Errorf("steps.csv:\n%s\nwant\n%s", steps, want)
	}
	plots, err := r.WritePlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(plots, " "), "step_time.png") {
		t.Errorf("no step_time plot in %v", plots)
	}
}
