package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
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
//	planes-TRANSPORT   goodput over time of each plane, for one transport
func (r *Report) WritePlots(dir string) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string) error {
		for _, ext := range []string{".png", ".svg"} {
			path := filepath.Join(dir, name+ext)
			if err := p.Save(plotWidth, plotHeight, path); err != nil {
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

// cleanTicks labels ticks with as few digits as they need ("50000", not
// "50000.00").
type cleanTicks struct{ plot.Ticker }

func (c cleanTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := c.Ticker.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
			if len(ts[i].Label) > 8 {
				ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 4, 64)
			}
		}
	}
	return ts
}

// xLimit returns the end of the time axis: the longest completed run
// with some room, so that a run that dragged on (waiting for routing to
// reconverge) does not squash the others; or the longest run if none
// completed. It also reports which transports run past it.
func (r *Report) xLimit() (float64, map[string]bool) {
	done, all := 0.0, 0.0
	for i := range r.Results {
		x := &r.Results[i]
		all = max(all, float64(x.SimTimeNs)/1e3)
		if x.FlowsCompleted == x.Flows && !x.Interrupted {
			done = max(done, float64(x.SimTimeNs)/1e3)
		}
	}
	limit := all
	if done > 0 && all > 1.5*done {
		limit = 1.5 * done
	}
	past := map[string]bool{}
	for i := range r.Results {
		if float64(r.Results[i].SimTimeNs)/1e3 > limit*1.001 {
			past[r.Results[i].Transport] = true
		}
	}
	return limit, past
}

// addSeries draws pts as series i of p with a legend entry: series i
// has a colour and, beyond the palette, a dash.
func addSeries(p *plot.Plot, pts plotter.XYs, i int, label string) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.5)
	if i >= 7 {
		l.Dashes = plotutil.Dashes(i / 7)
	}
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

// failureMarkers draws a dashed vertical line at each distinct failure
// start (and repair) time, from y 0 to top, with one legend entry.
func (r *Report) failureMarkers(p *plot.Plot, top float64) error {
	var starts, ends []float64
	for i := range r.Results {
		for _, f := range r.Results[i].Failures {
			starts = append(starts, float64(f.AtNs)/1e3)
			if f.UntilNs > 0 {
				ends = append(ends, float64(f.UntilNs)/1e3)
			}
		}
	}
	slices.Sort(starts)
	slices.Sort(ends)
	starts, ends = slices.Compact(starts), slices.Compact(ends)
	add := func(xs []float64, c color.Color, label string) error {
		for i, x := range xs {
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
			if err != nil {
				return err
			}
			l.Color = c
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			l.Width = vg.Points(1)
			p.Add(l)
			if i == 0 {
				p.Legend.Add(label, l)
			}
		}
		return nil
	}
	if err := add(starts, color.RGBA{R: 200, A: 255}, "failure"); err != nil {
		return err
	}
	return add(ends, color.RGBA{G: 140, A: 255}, "repair")
}

func (r *Report) goodputPlot() (*plot.Plot, error) {
	p := r.newPlot(r.Scenario+": goodput over time", "time (µs)", "goodput delivered to hosts (Gb/s)")
	top := 0.0
	limit, past := r.xLimit()
	for i := range r.Results {
		x := &r.Results[i]
		s := &x.Series
		pts := make(plotter.XYs, 0, len(s.TimesNs)+1)
		pts = append(pts, plotter.XY{})
		for j, t := range s.TimesNs {
			pts = append(pts, plotter.XY{X: float64(t) / 1e3, Y: s.TotalGbps[j]})
			if float64(t)/1e3 <= limit {
				top = max(top, s.TotalGbps[j])
			}
		}
		label := x.Transport
		if past[x.Transport] {
			label += " (runs on to " + Duration(x.SimTimeNs) + ")"
		}
		if err := addSeries(p, pts, i, label); err != nil {
			return nil, err
		}
	}
	p.X.Min, p.X.Max = 0, limit
	p.Y.Min, p.Y.Max = 0, math.Max(top, 1)*1.3
	if err := r.failureMarkers(p, math.Max(top, 1)*1.05); err != nil {
		return nil, err
	}
	return p, nil
}

func (r *Report) fctPlot() (*plot.Plot, error) {
	p := r.newPlot(r.Scenario+": flow completion times", "flow completion time (µs)", "fraction of flows")
	lo, hi := math.Inf(1), 0.0
	for i := range r.Results {
		for _, f := range r.Results[i].flows {
			if f.FCTNs > 0 && !f.Failed {
				lo, hi = math.Min(lo, float64(f.FCTNs)/1e3), math.Max(hi, float64(f.FCTNs)/1e3)
			}
		}
	}
	if hi > 20*lo {
		// Orders of magnitude apart: a log scale shows them all.
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Label.Text += ", log scale"
	}
	for i := range r.Results {
		x := &r.Results[i]
		var fcts []float64
		for _, f := range x.flows {
			if f.FCTNs >= 0 && !f.Failed {
				fcts = append(fcts, float64(f.FCTNs)/1e3)
			}
		}
		slices.Sort(fcts)
		pts := make(plotter.XYs, 0, len(fcts)+1)
		n := float64(max(x.Flows, 1)) // flows that never completed keep the curve below 1
		if len(fcts) > 0 {
			pts = append(pts, plotter.XY{X: fcts[0], Y: 0})
		}
		// At most ~2000 points: enough for the eye, small SVGs.
		step := max(len(fcts)/2000, 1)
		for j := 0; j < len(fcts); j += step {
			pts = append(pts, plotter.XY{X: fcts[j], Y: float64(j+1) / n})
		}
		if len(fcts) > 0 {
			pts = append(pts, plotter.XY{X: fcts[len(fcts)-1], Y: float64(len(fcts)) / n})
		}
		if len(pts) == 0 {
			continue
		}
		label := x.Transport
		if x.FlowsCompleted < x.Flows {
			label += fmt.Sprintf(" (%d of %d flows)", x.FlowsCompleted, x.Flows)
		}
		if err := addSeries(p, pts, i, label); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	return p, nil
}

// groupedBars draws values[transport][group] as bars grouped by group.
func (r *Report) groupedBars(p *plot.Plot, groups []string, values func(x *Result) []float64) error {
	n := len(r.Results)
	top := 0.0
	w := vg.Points(math.Max(4, math.Min(24, 360/float64(max(n*len(groups), 1)))))
	for i := range r.Results {
		x := &r.Results[i]
		vals := values(x)
		v := make(plotter.Values, len(groups))
		copy(v, vals)
		b, err := plotter.NewBarChart(v, w)
		if err != nil {
			return err
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(b)
		label := x.Transport
		if x.FlowsCompleted < x.Flows {
			label += " (incomplete: over " + Duration(x.SimTimeNs) + ")"
		}
		p.Legend.Add(label, b)
		for _, y := range v {
			top = math.Max(top, y)
		}
	}
	p.NominalX(groups...)
	p.Y.Min, p.Y.Max = 0, math.Max(top, 0.01)*1.35 // room for the legend
	return nil
}

func (r *Report) planePlot() (*plot.Plot, error) {
	p := r.newPlot(r.Scenario+": host uplink utilisation by plane", "plane", "utilisation over the completion time")
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
	p := r.newPlot(r.Scenario+": link utilisation by class (mean over the completion time)", "links", "mean utilisation")
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
	p := r.newPlot(fmt.Sprintf("%s: goodput per plane, %s", r.Scenario, x.Transport), "time (µs)", "goodput (Gb/s)")
	s := &x.Series
	top := 0.0
	for pl, g := range s.PlaneGbps {
		pts := make(plotter.XYs, 0, len(g)+1)
		pts = append(pts, plotter.XY{})
		for j, v := range g {
			if j < len(s.TimesNs) {
				pts = append(pts, plotter.XY{X: float64(s.TimesNs[j]) / 1e3, Y: v})
				top = max(top, v)
			}
		}
		if err := addSeries(p, pts, pl, fmt.Sprintf("plane %d", pl)); err != nil {
			return nil, err
		}
	}
	limit, _ := r.xLimit()
	p.X.Min, p.X.Max = 0, math.Min(limit, float64(x.SimTimeNs)/1e3)
	p.Y.Min, p.Y.Max = 0, math.Max(top, 1)*1.45
	if err := r.failureMarkers(p, math.Max(top, 1)*1.05); err != nil {
		return nil, err
	}
	return p, nil
}
