package report

import (
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openmrc/mrc/sim"
)

// colourDistance is the Euclidean distance of two colours in RGB.
func colourDistance(a, b color.Color) float64 {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	d := func(x, y uint32) float64 { return (float64(x) - float64(y)) / 257 }
	return math.Sqrt(d(ar, br)*d(ar, br) + d(ag, bg)*d(ag, bg) + d(ab, bb)*d(ab, bb))
}

// TestSeriesStyles checks that the planes of a plane plot (up to 16)
// are told apart by colour or dash, the first len(palette) by colour
// alone, and that no series looks like a failure or repair marker.
func TestSeriesStyles(t *testing.T) {
	for i := range len(palette) {
		for j := range i {
			if d := colourDistance(seriesStyle(i).Color, seriesStyle(j).Color); d < 60 {
				t.Errorf("series %d and %d: colours %v and %v too close (%.0f)", i, j, seriesStyle(i).Color, seriesStyle(j).Color, d)
			}
		}
	}
	for i := range 40 {
		si := seriesStyle(i)
		for _, m := range []color.Color{failureColour, repairColour} {
			if d := colourDistance(si.Color, m); d < 80 {
				t.Errorf("series %d: colour %v close to a marker's %v (%.0f)", i, si.Color, m, d)
			}
		}
		if slices.Equal(si.Dashes, markerStyle(failureColour).Dashes) {
			t.Errorf("series %d: dashed like the markers", i)
		}
		for j := range i {
			sj := seriesStyle(j)
			if si.Color == sj.Color && slices.Equal(si.Dashes, sj.Dashes) {
				t.Errorf("series %d and %d drawn alike", i, j)
			}
		}
	}
}

func TestFailureLabel(t *testing.T) {
	for _, c := range []struct {
		fs   []sim.FailureResult
		want string
	}{
		{[]sim.FailureResult{{Kind: "switch_blackhole", Element: "t1-p0-5"}}, "t1-p0-5 switch black-holing"},
		{[]sim.FailureResult{{Kind: "link_down", Element: "t0-p3-4/t1-p3-5"}, {Kind: "link_down", Element: "t0-p1-0/t1-p1-2"},
			{Kind: "link_down", Element: "t0-p3-1/t1-p3-0"}}, "3 links down: t0-p1-0/t1-p1-2, … (planes 1, 3)"},
		{[]sim.FailureResult{{Kind: "nic_port_down", Element: "h3/p1"}, {Kind: "nic_port_down", Element: "h4/p1"}},
			"2 NIC ports down: h3/p1, h4/p1 (plane 1)"},
		{[]sim.FailureResult{{Kind: "lossy_link", Element: "t0-1/t1-2"}, {Kind: "switch_down", Element: "t1-3"}, {Kind: "switch_down", Element: "h2"}},
			"t0-1/t1-2 lossy link; 2 switches down: h2, t1-3"},
	} {
		if got := failureLabel(c.fs); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestFailureEvents checks that failures at the same time share a
// marker, that each time gets one, and that repairs are separate.
func TestFailureEvents(t *testing.T) {
	r := &Report{}
	fs := []sim.FailureResult{{Kind: "link_down", Element: "a/b", AtNs: 50_000}, {Kind: "link_down", Element: "c/d", AtNs: 50_000, UntilNs: 90_000},
		{Kind: "switch_down", Element: "t1-p2-0", AtNs: 70_000}}
	r.Add(&sim.Result{Transport: "mrc", Failures: fs}, false)
	r.Add(&sim.Result{Transport: "roce", Failures: fs}, false)
	starts, repairs := r.failureEvents()
	want := []failureEvent{{50_000, "2 links down: a/b, c/d"}, {70_000, "t1-p2-0 switch down"}}
	if !slices.Equal(starts, want) {
		t.Errorf("starts %v, want %v", starts, want)
	}
	if len(repairs) != 1 || repairs[0].AtNs != 90_000 {
		t.Errorf("repairs %v, want one at 90 µs", repairs)
	}
}

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		got  unit
		want string
	}{
		{timeUnit(800), "µs"}, {timeUnit(4400), "µs"}, {timeUnit(202_000), "ms"}, {timeUnit(3e7), "s"},
		{rateUnit(500), "Gb/s"}, {rateUnit(120_000), "Tb/s"},
	} {
		if c.got.name != c.want {
			t.Errorf("got %q, want %q", c.got.name, c.want)
		}
	}
}

// TestXLimit checks that a run 100× longer than the others is cut off,
// even when it completed.
func TestXLimit(t *testing.T) {
	r := &Report{}
	for _, d := range []struct {
		name string
		ns   int64
	}{{"mrc", 755_000}, {"roce-pfc", 2_940_000}, {"roce", 202_000_000}} {
		r.Add(&sim.Result{Transport: d.name, Flows: 1, FlowsCompleted: 1, SimTimeNs: d.ns}, false)
	}
	limit, past := r.xLimit()
	if limit != 1.5*2940 || !past["roce"] || past["roce-pfc"] || past["mrc"] {
		t.Errorf("limit %v µs, past %v; want 4410 µs, roce past", limit, past)
	}
}

func TestCDFOverlap(t *testing.T) {
	a := []float64{90, 95, 100, 101, 102, 110, 120, 140, 300, 400}
	b := slices.Clone(a)
	b[9] = 700
	lin := func(v float64) float64 { return v }
	if !cdfOverlap(a, 10, b, 10, lin, 700-90) {
		t.Error("curves that differ only at the last flow: no overlap")
	}
	c := make([]float64, len(a))
	for i := range a {
		c[i] = a[i] + 60
	}
	if cdfOverlap(a, 10, c, 10, lin, 460-90) {
		t.Error("curves 60 µs apart overlap")
	}
	if cdfOverlap(a, 10, a[:5], 10, lin, 400-90) {
		t.Error("a curve that stops at half overlaps the whole one")
	}
}

// TestWritePlots writes the plots of a small report with failures and
// a transport that ran on long after the other.
func TestWritePlots(t *testing.T) {
	r := &Report{Scenario: "t", Planes: 2}
	series := sim.Series{TimesNs: []int64{1000, 2000, 3000}, TotalGbps: []float64{1500, 1600, 10}, PlaneGbps: [][]float64{{750, 800, 5}, {750, 800, 5}}}
	flows := []sim.FlowResult{{ID: 1, FCTNs: 1500}, {ID: 2, FCTNs: 2500}}
	fs := []sim.FailureResult{{Kind: "link_down", Element: "t0-p1-0/t1-p1-1", AtNs: 1500}}
	r.Add(&sim.Result{Transport: "mrc", Flows: 2, FlowsCompleted: 2, SimTimeNs: 3000, Series: series, FlowResults: flows, Failures: fs,
		PerPlane: []sim.PlaneResult{{Plane: 0, Utilisation: 0.6}, {Plane: 1, Utilisation: 0.5}}}, false)
	r.Add(&sim.Result{Transport: "roce", Flows: 2, FlowsCompleted: 1, SimTimeNs: 3_000_000, Series: series, FlowResults: flows[:1], Failures: fs,
		PerPlane: []sim.PlaneResult{{Plane: 0, Utilisation: 0.001}, {Plane: 1, Utilisation: 0.002}}}, false)
	dir := t.TempDir()
	files, err := r.WritePlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 12 {
		t.Errorf("%d files, want 12", len(files))
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 || filepath.Dir(f) != dir {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestLabelX checks that a marker label starts right of the markers its
// text would cross, and stays put when none is near.
func TestLabelX(t *testing.T) {
	marks := []float64{30, 40, 120, 900}
	if got := labelX(30, "t1-3 switch down", marks, 2000); got != 120 {
		t.Errorf("label at 30 starts at %v, want 120 (past the markers at 40 and 120)", got)
	}
	if got := labelX(900, "t1-3 switch down", marks, 2000); got != 900 {
		t.Errorf("label at 900 moved to %v", got)
	}
}
