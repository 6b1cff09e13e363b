package report

import (
	"fmt"
	"image/color"
	"path/filepath"

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
	Series []BandSeries
}

// BandSeries is one line of a BandPlot: at each X, the median Mid and
// the spread Lo..Hi. The slices have equal lengths, X ascending.
type BandSeries struct {
	Label       string
	X, Mid      []float64
	Lo, Hi      []float64
	Repetitions int // the values behind each point (at most), for the legend
}

// Write writes the plot into dir as NAME.png and NAME.svg and returns
// their paths.
func (b *BandPlot) Write(dir, name string) ([]string, error) {
	var r Report
	p := r.newPlot(b.Title, b.XLabel, b.YLabel)
	if b.XNames != nil {
		p.NominalX(b.XNames...)
		p.X.Label.Text = b.XLabel
	}
	for i, s := range b.Series {
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
