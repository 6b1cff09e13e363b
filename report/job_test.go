package report

import (
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

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
			Straggler: &job.Straggler{Step: 1, Rank: 5, Longest: "dp all_reduce", LongestNs: 9e6,
				Critical: &job.CriticalFlow{Flow: 7, Src: 4, Dst: 5, StartNs: 1000, RecvNs: 3_001_000, Failures: []string{"t1-2"},
					HotLink: &job.HotLink{Link: "t0-1→h5", WaitedPackets: 1500, WaitedNs: 6_000_000, Trimmed: 3}}}}
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
		"GPU idle 75% 75%", "slowest step held up by rank 5: dp all_reduce (9 ms)",
		"critical path's slowest flow flow 7, h4→h5, 3 ms, sent into t1-2", "its most congested link t0-1→h5: 1,500 pkts waited 6 ms in all, 3 trimmed, 0 dropped", "dp (all_reduce, 8 ranks, 64 MiB)", "mrc 9 ms, 95.1 Gb/s (×2)"} {
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

// The step timeline draws each rank's phases at their lengths: with a
// rank computing 0–200 µs and 300–700 µs and communicating 200–300 µs
// and 400–900 µs, the plot's pixels at those times show compute,
// exposed communication, and communication under compute; the plot is
// written beside step_time.
func TestJobTimelinePlot(t *testing.T) {
	jr := &job.Result{Ranks: 1, Steps: 1, StepsDone: 1, StepNs: []int64{900_000},
		Timeline: []job.RankTimeline{{Rank: 3, Straggler: true, StepEndNs: []int64{900_000},
			ComputeNs: [][2]int64{{0, 200_000}, {300_000, 700_000}}, CommNs: [][2]int64{{200_000, 300_000}, {400_000, 900_000}}}}}
	r := &Report{Scenario: "t"}
	r.Add(&sim.Result{Transport: "mrc", Job: jr}, false)
	rows := r.timelineRows()
	want := []timelineBar{{0, 200_000, barCompute}, {300_000, 700_000, barCompute}, {400_000, 700_000, barOverlapped},
		{200_000, 300_000, barExposed}, {700_000, 900_000, barExposed}}
	if len(rows) != 1 || rows[0].label != "mrc r3 (slowest)" || !slices.Equal(rows[0].bars, want) || !slices.Equal(rows[0].ends, []int64{900_000}) {
		t.Fatalf("rows %+v, want one of bars %v", rows, want)
	}

	p := r.timelinePlot(rows)
	const dpi = 96
	c := vgimg.NewWith(vgimg.UseWH(plotWidth, timelineHeight(1)), vgimg.UseDPI(dpi))
	dc := draw.New(c)
	p.Draw(dc)
	da := p.DataCanvas(dc)
	trX, trY := p.Transforms(&da)
	img := c.Image()
	h := img.Bounds().Dy()
	at := func(us, y float64) color.Color {
		px := int(float64(trX(us)) * dpi / 72)
		py := h - int(float64(trY(y))*dpi/72)
		return img.At(px, py)
	}
	near := func(a, b color.Color) bool { return colourDistance(a, b) < 10 }
	for _, c := range []struct {
		us, y float64
		want  color.Color
	}{
		{100, 0, timelineKinds[barCompute].colour},
		{250, 0, timelineKinds[barExposed].colour},
		{550, 0, timelineKinds[barOverlapped].colour},
		{550, 0.3, timelineKinds[barCompute].colour},
		{800, 0, timelineKinds[barExposed].colour},
		{800, 0.3, timelineKinds[barExposed].colour},
		{850, 0.42, color.White},
		// The edges: 10 µs inside and outside each phase.
		{190, 0.3, timelineKinds[barCompute].colour},
		{210, 0.3, timelineKinds[barExposed].colour},
		{290, 0.3, timelineKinds[barExposed].colour},
		{310, 0.3, timelineKinds[barCompute].colour},
		{390, 0, timelineKinds[barCompute].colour},
		{410, 0, timelineKinds[barOverlapped].colour},
		{690, 0.3, timelineKinds[barCompute].colour},
		{710, 0.3, timelineKinds[barExposed].colour},
		{890, 0, timelineKinds[barExposed].colour},
		{912, 0, color.White},
	} {
		if got := at(c.us, c.y); !near(got, c.want) {
			t.Errorf("at %v µs, row offset %v: colour %v, want %v", c.us, c.y, got, c.want)
		}
	}

	dir := t.TempDir()
	files, err := r.WritePlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"step_time.png", "step_timeline.png", "step_timeline.svg"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 || !strings.Contains(strings.Join(files, " "), f) {
			t.Errorf("%s not written (%v; files %v)", f, err, files)
		}
	}
}
