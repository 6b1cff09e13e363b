package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The step timeline: one row per shown rank of each transport's job
// (job.Result.Timeline), time across, with the rank's compute phases,
// its communication hidden under compute, its exposed communication and
// the ends of its steps.

// barKind is what a timeline bar shows.
type barKind uint8

const (
	barCompute    barKind = iota // a compute phase
	barOverlapped                // communication under compute
	barExposed                   // communication with no compute running
)

// Bar heights as a share of a row, and colours.
var timelineKinds = [...]struct {
	label  string
	height float64
	colour color.Color
}{
	barCompute:    {"compute", 0.7, palette[0]},
	barOverlapped: {"communication under compute", 0.25, color.RGBA{R: 250, G: 200, B: 120, A: 255}},
	barExposed:    {"exposed communication", 0.7, palette[1]},
}

// timelineBar is one interval of a row, in nanoseconds.
type timelineBar struct {
	from, to int64
	kind     barKind
}

// timelineRow is one rank of one transport's run.
type timelineRow struct {
	label string
	bars  []timelineBar
	ends  []int64 // the rank's step ends (ns)
}

// timelineRows gathers the rows of every result with a job timeline, in
// result then rank order.
func (r *Report) timelineRows() []timelineRow {
	var rows []timelineRow
	for i := range r.Results {
		x := &r.Results[i]
		if x.Job == nil {
			continue
		}
		for k := range x.Job.Timeline {
			rt := &x.Job.Timeline[k]
			row := timelineRow{label: fmt.Sprintf("%s r%d", x.Transport, rt.Rank), ends: rt.StepEndNs}
			if rt.Straggler {
				row.label += " (slowest)"
			}
			for kind, spans := range [][][2]int64{barCompute: rt.ComputeNs, barOverlapped: rt.OverlappedNs(), barExposed: rt.ExposedNs()} {
				for _, s := range spans {
					row.bars = append(row.bars, timelineBar{s[0], s[1], barKind(kind)})
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// timelinePlot draws the step timeline; rows is timelineRows' result
// (not empty).
func (r *Report) timelinePlot(rows []timelineRow) *plot.Plot {
	var top int64
	for _, row := range rows {
		for _, b := range row.bars {
			top = max(top, b.to)
		}
		for _, e := range row.ends {
			top = max(top, e)
		}
	}
	tu := timeUnit(float64(top) / 1e3)
	p := r.newPlot(r.Scenario+": step timeline by rank", "time ("+tu.name+")", "")
	tl := &timeline{rows: rows, div: 1e3 * tu.div}
	p.Add(tl)
	labels := make([]string, len(rows))
	for i, row := range rows {
		labels[len(rows)-1-i] = row.label // the first row on top
	}
	p.NominalY(labels...)
	p.X.Min, p.X.Max = 0, float64(top)/tl.div*1.02
	for k := range timelineKinds {
		p.Legend.Add(timelineKinds[k].label, swatch{timelineKinds[k].colour})
	}
	p.Legend.Add("step end", swatch{color.Black})
	p.Y.Max = float64(len(rows)) + 2.5 // room for the legend above the rows
	return p
}

// timelineHeight is the plot height for rows rows.
func timelineHeight(rows int) vg.Length {
	return max(plotHeight, vg.Length(rows+3)*vg.Points(18)+vg.Inch)
}

// timeline is the plotter of timelineRows: row i is centred at
// y = rows−1−i.
type timeline struct {
	rows []timelineRow
	div  float64 // ns per axis unit
}

func (t *timeline) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	n := len(t.rows)
	for i, row := range t.rows {
		y := float64(n - 1 - i)
		for _, b := range row.bars {
			k := timelineKinds[b.kind]
			x0, x1 := trX(float64(b.from)/t.div), trX(float64(b.to)/t.div)
			if x1-x0 < vg.Points(0.5) {
				x1 = x0 + vg.Points(0.5) // a short phase still shows
			}
			rect := []vg.Point{{X: x0, Y: trY(y - k.height/2)}, {X: x1, Y: trY(y - k.height/2)},
				{X: x1, Y: trY(y + k.height/2)}, {X: x0, Y: trY(y + k.height/2)}}
			c.FillPolygon(k.colour, c.ClipPolygonXY(rect))
		}
		for _, e := range row.ends {
			x := trX(float64(e) / t.div)
			c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}, x, trY(y-0.45), x, trY(y+0.45))
		}
	}
}

func (t *timeline) DataRange() (xmin, xmax, ymin, ymax float64) {
	for _, row := range t.rows {
		for _, b := range row.bars {
			xmax = max(xmax, float64(b.to)/t.div)
		}
	}
	return 0, xmax, -0.5, float64(len(t.rows)) - 0.5
}

// swatch is a legend entry's filled box.
type swatch struct{ colour color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.colour, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}
