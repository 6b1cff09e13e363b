package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

// BandPlot is a metric against a parameter, one line per series (the
// median at each x) with the spread (min to max) as a shaded band:
// what `mrc sweep collect` draws over seeds.
type BandPlot struct {
	Title, XLabel, YLabel string
	// XNames, when set, label the x positions 0, 1, … (a parameter
	// whose values are not numbers).
	XNames []string
	// YNanoseconds says the values are times in ns: the axis shows them
	// in µs, ms or s.
	YNanoseconds bool
	Series       []BandSeries
}

// BandSeries is one line of a BandPlot: at each X, the median Mid and
// the spread Lo..Hi. The slices have equal lengths, X ascending.
type BandSeries struct {
	Label       string
	X, Mid      []float64
	Lo, Hi      []float64
	Repetitions int // the values behind each point (at most), for the legend
}

// scaled returns s with its values multiplied by f.
func (s BandSeries) scaled(f float64) BandSeries {
	mul := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x * f
		}
		return out
	}
	s.Mid, s.Lo, s.Hi = mul(s.Mid), mul(s.Lo), mul(s.Hi)
	return s
}

// Write writes the plot into dir as NAME.png and NAME.svg and returns
// their paths.
func (b *BandPlot) Write(dir, name string) ([]string, error) {
	var r Report
	yLabel, scale := b.YLabel, 1.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range b.Series {
		for j := range s.X {
			lo, hi = min(lo, s.Lo[j]), max(hi, s.Hi[j])
		}
	}
	if b.YNanoseconds {
		u := timeUnit(hi / 1e3)
		scale = 1 / (1e3 * u.div)
		yLabel += " (" + u.name + ")"
	}
	// A log axis when the values span more than 50×.
	logY := lo > 0 && hi/lo > 50
	if logY {
		yLabel += ", log scale"
	}
	p := r.newPlot(b.Title, b.XLabel, yLabel)
	if b.XNames != nil {
		p.NominalX(b.XNames...)
		p.X.Label.Text = b.XLabel
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, s := range b.Series {
		s = s.scaled(scale)
		style := seriesStyle(i)
		if len(s.X) > 1 {
			var poly plotter.XYs
			for j := range s.X {
				poly = append(poly, plotter.XY{X: s.X[j], Y: s.Lo[j]})
			}
			for j := len(s.X) - 1; j >= 0; j-- {
				poly = append(poly, plotter.XY{X: s.X[j], Y: s.Hi[j]})
			}
			band, err := plotter.NewPolygon(poly)
			if err != nil {
				return nil, err
			}
			c := color.NRGBAModel.Convert(style.Color).(color.NRGBA)
			c.A = 45
			band.Color = c
			band.LineStyle.Width = 0
			p.Add(band)
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			pts[j] = plotter.XY{X: s.X[j], Y: s.Mid[j]}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.LineStyle = style
		points.GlyphStyle = draw.GlyphStyle{Color: style.Color, Radius: 2.5, Shape: draw.CircleGlyph{}}
		// Error bars for single points, where there is no band to see.
		if len(s.X) == 1 && s.Hi[0] > s.Lo[0] {
			bar, err := plotter.NewLine(plotter.XYs{{X: s.X[0], Y: s.Lo[0]}, {X: s.X[0], Y: s.Hi[0]}})
			if err != nil {
				return nil, err
			}
			bar.LineStyle = style
			p.Add(bar)
		}
		p.Add(line, points)
		label := s.Label
		if s.Repetitions > 1 {
			label += fmt.Sprintf(" (median, min–max of %d)", s.Repetitions)
		}
		p.Legend.Add(label, line, points)
	}
	var files []string
	for _, ext := range []string{".png", ".svg"} {
		path := filepath.Join(dir, name+ext)
		if err := p.Save(plotWidth, plotHeight, path); err != nil {
			return files, fmt.Errorf("writing %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}
