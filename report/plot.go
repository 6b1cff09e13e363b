package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot sizes.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// WritePlots writes the report's plots into dir (which must exist), each
// as PNG and SVG, and returns their paths:
//
//	goodput            goodput over time, one line per transport, failures marked
//	fct_cdf            the CDF of flow completion times, one line per transport
//	plane_utilisation  each plane's host-uplink utilisation, bars per transport
//	link_utilisation   mean utilisation of each class of links, bars per transport
//	step_time          a training job's step times, one line per transport
//	step_timeline      a training job's compute and communication over time,
//	                   for a few ranks of each transport (job.Result.Timeline)
//	planes-TRANSPORT   goodput over time of each plane, for one transport
func (r *Report) WritePlots(dir string) ([]string, error) {
	var files []string
	height := plotHeight
	save := func(p *plot.Plot, name string) error {
		for _, ext := range []string{".png", ".svg"} {
			path := filepath.Join(dir, name+ext)
			if err := p.Save(plotWidth, height, path); err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
			files = append(files, path)
		}
		return nil
	}
	plots := []struct {
		name string
		make func() (*plot.Plot, error)
	}{
		{"goodput", r.goodputPlot},
		{"fct_cdf", r.fctPlot},
		{"plane_utilisation", r.planePlot},
		{"link_utilisation", r.linkPlot},
	}
	for _, pl := range plots {
		p, err := pl.make()
		if err != nil {
			return files, err
		}
		if err := save(p, pl.name); err != nil {
			return files, err
		}
	}
	if r.hasJob() {
		p, err := r.stepPlot()
		if err != nil {
			return files, err
		}
		if err := save(p, "step_time"); err != nil {
			return files, err
		}
		if rows := r.timelineRows(); len(rows) > 0 {
			height = timelineHeight(len(rows))
			err := save(r.timelinePlot(rows), "step_timeline")
			height = plotHeight
			if err != nil {
				return files, err
			}
		}
	}
	for i := range r.Results {
		x := &r.Results[i]
		p, err := r.planeSeriesPlot(x)
		if err != nil {
			return files, err
		}
		if err := save(p, "planes-"+fileName(x.Transport)); err != nil {
			return files, err
		}
	}
	return files, nil
}

func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, s)
}

func (r *Report) newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Tick.Marker = cleanTicks{plot.DefaultTicks{}}
	p.Y.Tick.Marker = cleanTicks{plot.DefaultTicks{}}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// runUs is how long a transport's run lasted, in microseconds.
func runUs(x *Result) float64 { return float64(x.SimTimeNs) / 1e3 }

// xLimit returns the end of the time axes in microseconds: the longest
// run that took at most 4× the shortest, with some room, so that a run
// that dragged on (waiting for routing to reconverge, or for retransmit
// timers) does not squash the others. It also reports which transports
// run past it.
func (r *Report) xLimit() (float64, map[string]bool) {
	var runs []float64
	for i := range r.Results {
		if d := runUs(&r.Results[i]); d > 0 {
			runs = append(runs, d)
		}
	}
	slices.Sort(runs)
	limit := 0.0
	if len(runs) > 0 {
		limit = runs[len(runs)-1]
		kept := runs[0]
		for _, d := range runs {
			if d <= 4*runs[0] {
				kept = d
			}
		}
		if limit > 1.5*kept {
			limit = 1.5 * kept
		}
	}
	past := map[string]bool{}
	for i := range r.Results {
		if runUs(&r.Results[i]) > limit*1.001 {
			past[r.Results[i].Transport] = true
		}
	}
	return limit, past
}

// addSeries draws pts as series i of p (seriesStyle) with a legend
// entry.
func addSeries(p *plot.Plot, pts plotter.XYs, i int, label string) (*plotter.Line, error) {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.LineStyle = seriesStyle(i)
	p.Add(l)
	p.Legend.Add(label, l)
	return l, nil
}

func (r *Report) goodputPlot() (*plot.Plot, error) {
	limit, past := r.xLimit()
	top := 0.0 // Gb/s
	for i := range r.Results {
		s := &r.Results[i].Series
		for j, t := range s.TimesNs {
			if float64(t)/1e3 <= limit {
				top = max(top, s.TotalGbps[j])
			}
		}
	}
	tu, ru := timeUnit(limit), rateUnit(top)
	p := r.newPlot(r.Scenario+": goodput over time", "time ("+tu.name+")", "goodput delivered to hosts ("+ru.name+")")
	for i := range r.Results {
		x := &r.Results[i]
		s := &x.Series
		pts := make(plotter.XYs, 0, len(s.TimesNs)+1)
		pts = append(pts, plotter.XY{})
		for j, t := range s.TimesNs {
			pts = append(pts, plotter.XY{X: float64(t) / 1e3 / tu.div, Y: s.TotalGbps[j] / ru.div})
		}
		label := x.Transport
		if past[x.Transport] {
			label += " (runs on to " + Duration(x.SimTimeNs) + ")"
		}
		if _, err := addSeries(p, pts, i, label); err != nil {
			return nil, err
		}
	}
	yTop := math.Max(top/ru.div, 1)
	if err := r.failureMarkers(p, tu, yTop*1.05, limit/tu.div); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = 0, limit/tu.div
	p.Y.Min, p.Y.Max = 0, yTop*1.3
	return p, nil
}

// cdf is one transport's completed flows' FCTs, sorted, over its flows.
type cdf struct {
	fcts  []float64 // µs
	flows int
}

func (r *Report) fctPlot() (*plot.Plot, error) {
	cdfs := make([]cdf, len(r.Results))
	lo, hi := math.Inf(1), 0.0
	for i := range r.Results {
		x := &r.Results[i]
		for _, f := range x.flows {
			if f.FCTNs >= 0 && !f.Failed {
				cdfs[i].fcts = append(cdfs[i].fcts, float64(f.FCTNs)/1e3)
			}
		}
		slices.Sort(cdfs[i].fcts)
		cdfs[i].flows = max(x.Flows, 1) // flows that never completed keep the curve below 1
		if c := cdfs[i].fcts; len(c) > 0 {
			lo, hi = math.Min(lo, math.Max(c[0], 1e-3)), math.Max(hi, c[len(c)-1])
		}
	}
	tu := timeUnit(hi)
	p := r.newPlot(r.Scenario+": flow completion times", "flow completion time ("+tu.name+")", "fraction of flows")
	pos, span := func(v float64) float64 { return v }, hi-lo
	if hi > 20*lo {
		// Orders of magnitude apart: a log scale shows them all.
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Label.Text += ", log scale"
		pos, span = func(v float64) float64 { return math.Log10(math.Max(v, 1e-3)) }, math.Log10(hi/lo)
	}
	for i := range r.Results {
		x, c := &r.Results[i], cdfs[i]
		if len(c.fcts) == 0 {
			continue
		}
		label := x.Transport
		if x.FlowsCompleted < x.Flows {
			label += fmt.Sprintf(" (%d of %d flows)", x.FlowsCompleted, x.Flows)
		}
		// A curve drawn over an earlier one is dotted, and says so, so
		// that both show.
		under := ""
		for j := range i {
			if cdfOverlap(cdfs[j].fcts, cdfs[j].flows, c.fcts, c.flows, pos, span) {
				under = r.Results[j].Transport
				break
			}
		}
		if under != "" {
			label += ", dotted: overlaps " + under
		}
		l, err := addSeries(p, cdfPoints(c, tu), i, label)
		if err != nil {
			return nil, err
		}
		if under != "" {
			l.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
			l.Width = vg.Points(2.5)
		}
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	return p, nil
}

// cdfPoints returns the steps of a CDF in time unit u: at most ~2000
// points, enough for the eye and small SVGs.
func cdfPoints(c cdf, u unit) plotter.XYs {
	n := float64(c.flows)
	pts := plotter.XYs{{X: c.fcts[0] / u.div, Y: 0}}
	step := max(len(c.fcts)/2000, 1)
	for j := 0; j < len(c.fcts); j += step {
		pts = append(pts, plotter.XY{X: c.fcts[j] / u.div, Y: float64(j+1) / n})
	}
	return append(pts, plotter.XY{X: c.fcts[len(c.fcts)-1] / u.div, Y: float64(len(c.fcts)) / n})
}

// groupedBars draws values[transport][group] (fractions) as percentages
// in bars grouped by group. Each transport's values are averaged over
// its own run, which the legend says of a run much longer than the
// others'; a bar too short to see has its value written above it.
func (r *Report) groupedBars(p *plot.Plot, groups []string, values func(x *Result) []float64) error {
	if len(groups) == 0 {
		return nil // nothing measured: an empty plot
	}
	n := len(r.Results)
	top := 0.0
	for i := range r.Results {
		for _, v := range values(&r.Results[i]) {
			top = math.Max(top, 100*v)
		}
	}
	top = math.Max(top, 0.01)
	_, past := r.xLimit()
	w := vg.Points(math.Max(4, math.Min(24, 360/float64(max(n*len(groups), 1)))))
	for i := range r.Results {
		x := &r.Results[i]
		v := make(plotter.Values, len(groups))
		for g, f := range values(x) {
			v[g] = 100 * f
		}
		b, err := plotter.NewBarChart(v, w)
		if err != nil {
			return err
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(b)
		var notes []string
		if x.FlowsCompleted < x.Flows {
			notes = append(notes, "incomplete")
		}
		if past[x.Transport] {
			notes = append(notes, "over its "+Duration(x.SimTimeNs)+" run")
		}
		label := x.Transport
		if len(notes) > 0 {
			label += " (" + strings.Join(notes, ", ") + ")"
		}
		p.Legend.Add(label, b)
		if err := smallBarLabels(p, v, b.Offset, top); err != nil {
			return err
		}
	}
	p.NominalX(groups...)
	p.Y.Min, p.Y.Max = 0, top*1.35 // room for the legend
	return nil
}

// smallBarLabels writes the value of each bar of v shorter than 3% of
// top above it, upright, so that a bar too short to see still shows.
func smallBarLabels(p *plot.Plot, v plotter.Values, offset vg.Length, top float64) error {
	var at plotter.XYs
	var labels []string
	for g, y := range v {
		if y < 0.03*top {
			at = append(at, plotter.XY{X: float64(g), Y: y})
			labels = append(labels, percent(y/100))
		}
	}
	if len(at) == 0 {
		return nil
	}
	ls, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: labels})
	if err != nil {
		return err
	}
	for i := range ls.TextStyle {
		ls.TextStyle[i].Font.Size = vg.Points(8)
		ls.TextStyle[i].Rotation = math.Pi / 2
		ls.TextStyle[i].XAlign = draw.XLeft
		ls.TextStyle[i].YAlign = draw.YCenter
	}
	ls.Offset = vg.Point{X: offset, Y: vg.Points(2)}
	p.Add(ls)
	return nil
}

func (r *Report) planePlot() (*plot.Plot, error) {
	p := r.newPlot(r.Scenario+": host uplink utilisation by plane", "plane", "utilisation over the completion time (%)")
	planes := r.Planes
	groups := make([]string, planes)
	for i := range groups {
		groups[i] = fmt.Sprint(i)
	}
	err := r.groupedBars(p, groups, func(x *Result) []float64 {
		v := make([]float64, planes)
		for _, pl := range x.PerPlane {
			if pl.Plane < planes {
				v[pl.Plane] = pl.Utilisation
			}
		}
		return v
	})
	return p, err
}

func (r *Report) linkPlot() (*plot.Plot, error) {
	p := r.newPlot(r.Scenario+": link utilisation by class (mean over the completion time)", "links", "mean utilisation (%)")
	var classes []string
	for i := range r.Results {
		for _, l := range r.Results[i].Links {
			if !slices.Contains(classes, l.Class) {
				classes = append(classes, l.Class)
			}
		}
	}
	labels := make([]string, len(classes))
	for i, c := range classes {
		labels[i] = strings.ReplaceAll(c, "_", "→")
	}
	err := r.groupedBars(p, labels, func(x *Result) []float64 {
		v := make([]float64, len(classes))
		for _, l := range x.Links {
			v[slices.Index(classes, l.Class)] = l.Mean
		}
		return v
	})
	return p, err
}

func (r *Report) planeSeriesPlot(x *Result) (*plot.Plot, error) {
	limit, _ := r.xLimit()
	end := math.Min(limit, runUs(x))
	s := &x.Series
	top := 0.0 // Gb/s
	for _, g := range s.PlaneGbps {
		for j, v := range g {
			if j < len(s.TimesNs) && float64(s.TimesNs[j])/1e3 <= end {
				top = max(top, v)
			}
		}
	}
	tu, ru := timeUnit(end), rateUnit(top)
	title := fmt.Sprintf("%s: goodput per plane, %s", r.Scenario, x.Transport)
	if runUs(x) > end*1.001 {
		title += fmt.Sprintf(" (its first %s of %s)", Duration(int64(end*1e3)), Duration(x.SimTimeNs))
	}
	p := r.newPlot(title, "time ("+tu.name+")", "goodput ("+ru.name+")")
	for pl, g := range s.PlaneGbps {
		pts := make(plotter.XYs, 0, len(g)+1)
		pts = append(pts, plotter.XY{})
		for j, v := range g {
			if j < len(s.TimesNs) {
				pts = append(pts, plotter.XY{X: float64(s.TimesNs[j]) / 1e3 / tu.div, Y: v / ru.div})
			}
		}
		if _, err := addSeries(p, pts, pl, fmt.Sprintf("plane %d", pl)); err != nil {
			return nil, err
		}
	}
	yTop := math.Max(top/ru.div, 1)
	if err := r.failureMarkers(p, tu, yTop*1.05, end/tu.div); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = 0, end/tu.div
	p.Y.Min, p.Y.Max = 0, yTop*1.45
	return p, nil
}
