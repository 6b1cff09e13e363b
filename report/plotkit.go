package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/openmrc/mrc/sim"
)

// The markers' colours: red for a failure, green for a repair. No series
// colour is close to either.
var (
	failureColour = color.RGBA{R: 210, A: 255}
	repairColour  = color.RGBA{G: 130, A: 255}
	markerDashes  = []vg.Length{vg.Points(4), vg.Points(3)}
)

// palette is the series colours, distinct from each other and from the
// markers' red and green.
var palette = []color.RGBA{
	{R: 31, G: 100, B: 200, A: 255},  // blue
	{R: 240, G: 140, B: 0, A: 255},   // orange
	{R: 130, G: 60, B: 180, A: 255},  // purple
	{R: 0, G: 170, B: 180, A: 255},   // teal
	{R: 140, G: 90, B: 40, A: 255},   // brown
	{R: 230, G: 100, B: 190, A: 255}, // pink
	{R: 100, G: 100, B: 100, A: 255}, // grey
	{R: 175, G: 175, B: 20, A: 255},  // olive
	{R: 20, G: 30, B: 110, A: 255},   // navy
	{R: 130, G: 190, B: 240, A: 255}, // light blue
}

// seriesDashes are the dash patterns of series beyond each round of the
// palette; none is the markers' pattern.
var seriesDashes = [][]vg.Length{
	nil,
	{vg.Points(8), vg.Points(2)},
	{vg.Points(1.5), vg.Points(1.5)},
	{vg.Points(8), vg.Points(2), vg.Points(1.5), vg.Points(2)},
}

// seriesStyle is the line style of series i: a colour of the palette,
// solid for the first round, then dashed. Series 0 to
// len(palette)×len(seriesDashes)-1 all differ, and none is drawn like a
// failure or repair marker.
func seriesStyle(i int) draw.LineStyle {
	n := len(palette)
	return draw.LineStyle{
		Color:  palette[i%n],
		Width:  vg.Points(1.5),
		Dashes: seriesDashes[(i/n)%len(seriesDashes)],
	}
}

// markerStyle is the line style of a failure or repair marker.
func markerStyle(c color.Color) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(1), Dashes: markerDashes}
}

// unit is how an axis shows its values: divide by div, call it name.
type unit struct {
	div  float64
	name string
}

// timeUnit picks µs, ms or s for a time axis whose largest value is
// maxUs microseconds, so that tick labels have at most four digits
// before the point.
func timeUnit(maxUs float64) unit {
	switch {
	case maxUs >= 1e7:
		return unit{1e6, "s"}
	case maxUs >= 1e4:
		return unit{1e3, "ms"}
	}
	return unit{1, "µs"}
}

// rateUnit picks Gb/s or Tb/s for a rate axis whose largest value is
// maxGbps.
func rateUnit(maxGbps float64) unit {
	if maxGbps >= 1000 {
		return unit{1e3, "Tb/s"}
	}
	return unit{1, "Gb/s"}
}

// cleanTicks labels ticks with as few digits as they need ("50", not
// "50.00").
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

// failureEvent is a time at which failures start (or are repaired), and
// the words that label its marker.
type failureEvent struct {
	AtNs  int64
	Label string
}

// failureEvents gathers the failures of all results (the same elements
// fail in every transport's run) and groups them by the time they start
// and, separately, by the time they are repaired.
func (r *Report) failureEvents() (starts, repairs []failureEvent) {
	seen := map[sim.FailureResult]bool{}
	var all []sim.FailureResult
	for i := range r.Results {
		for _, f := range r.Results[i].Failures {
			k := sim.FailureResult{Kind: f.Kind, Element: f.Element, AtNs: f.AtNs, UntilNs: f.UntilNs}
			if !seen[k] {
				seen[k] = true
				all = append(all, k)
			}
		}
	}
	group := func(at func(f sim.FailureResult) (int64, bool)) []failureEvent {
		by := map[int64][]sim.FailureResult{}
		for _, f := range all {
			if t, ok := at(f); ok {
				by[t] = append(by[t], f)
			}
		}
		var out []failureEvent
		for t, fs := range by {
			out = append(out, failureEvent{AtNs: t, Label: failureLabel(fs)})
		}
		slices.SortFunc(out, func(a, b failureEvent) int { return cmp.Compare(a.AtNs, b.AtNs) })
		return out
	}
	starts = group(func(f sim.FailureResult) (int64, bool) { return f.AtNs, true })
	repairs = group(func(f sim.FailureResult) (int64, bool) { return f.UntilNs, f.UntilNs > 0 })
	return starts, repairs
}

// failureWords says what a failure kind does to its element, for one
// element and for several.
var failureWords = map[string][2]string{
	"link_down":        {"link down", "links down"},
	"link_flap":        {"link flapping", "links flapping"},
	"lossy_link":       {"lossy link", "lossy links"},
	"switch_down":      {"switch down", "switches down"},
	"switch_reboot":    {"switch rebooting", "switches rebooting"},
	"switch_blackhole": {"switch black-holing", "switches black-holing"},
	"nic_port_down":    {"NIC port down", "NIC ports down"},
}

// failureLabel names failures that start at the same time: "t1-p0-3 switch black-holing", or for several
// "16 links down: t0-p3-4/t1-p3-5, … (planes 0, 1, 3)".
func failureLabel(fs []sim.FailureResult) string {
	slices.SortFunc(fs, func(a, b sim.FailureResult) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Element, b.Element))
	})
	var parts []string
	for _, kind := range slices.Compact(kindsOf(fs)) {
		var elems []string
		for _, f := range fs {
			if f.Kind == kind {
				elems = append(elems, f.Element)
			}
		}
		w, ok := failureWords[kind]
		if !ok {
			w = [2]string{strings.ReplaceAll(kind, "_", " "), strings.ReplaceAll(kind, "_", " ")}
		}
		if len(elems) == 1 {
			parts = append(parts, elems[0]+" "+w[0])
			continue
		}
		s := fmt.Sprintf("%d %s: %s", len(elems), w[1], elems[0])
		if len(elems) == 2 {
			s += ", " + elems[1]
		} else {
			s += ", …"
		}
		if pl := planesOf(elems); pl != "" {
			s += " (" + pl + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func kindsOf(fs []sim.FailureResult) []string {
	var ks []string
	for _, f := range fs {
		ks = append(ks, f.Kind)
	}
	return ks
}

// planeName finds the plane in an element's name: the switch names
// t<tier>-p<plane>-<index> and host ports h<host>/p<plane>.
var planeName = regexp.MustCompile(`^(?:t\d+-p(\d+)-\d+|h\d+/p(\d+))(?:/|$)`)

// planesOf lists the planes of elements ("planes 0, 3"), or "" when
// some element's plane is unknown.
func planesOf(elems []string) string {
	var planes []int
	for _, e := range elems {
		m := planeName.FindStringSubmatch(e)
		if m == nil {
			return ""
		}
		p, _ := strconv.Atoi(m[1] + m[2])
		planes = append(planes, p)
	}
	slices.Sort(planes)
	planes = slices.Compact(planes)
	words := make([]string, len(planes))
	for i, p := range planes {
		words[i] = strconv.Itoa(p)
	}
	if len(planes) == 1 {
		return "plane " + words[0]
	}
	return "planes " + strings.Join(words, ", ")
}

// maxMarkerLabels is how many failure times get a text label; the
// legend counts the rest.
const maxMarkerLabels = 4

// failureMarkers draws a dashed vertical line from y 0 to top at each
// time failures start (red) and are repaired (green), in time unit u on
// an axis that ends at xMax, each start labelled with what failed; one
// legend entry each.
func (r *Report) failureMarkers(p *plot.Plot, u unit, top, xMax float64) error {
	starts, repairs := r.failureEvents()
	var marks []float64 // every marker's x
	for _, e := range slices.Concat(starts, repairs) {
		marks = append(marks, float64(e.AtNs)/1e3/u.div)
	}
	add := func(evs []failureEvent, c color.Color, what string, labelled int) error {
		var at plotter.XYs
		var labels []string
		for i, e := range evs {
			x := float64(e.AtNs) / 1e3 / u.div
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
			if err != nil {
				return err
			}
			l.LineStyle = markerStyle(c)
			p.Add(l)
			if i == 0 {
				name := what
				if len(evs) > 1 {
					name = fmt.Sprintf("%s (%d times)", what, len(evs))
				}
				p.Legend.Add(name, l)
			}
			if i < labelled {
				// Later labels sit lower, so that close times stay
				// legible.
				at = append(at, plotter.XY{X: labelX(x, e.Label, marks, xMax), Y: top * (1 - 0.06*float64(i))})
				labels = append(labels, e.Label)
			}
		}
		if len(labels) == 0 {
			return nil
		}
		ls, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: labels})
		if err != nil {
			return err
		}
		for i := range ls.TextStyle {
			ls.TextStyle[i].Color = c
			ls.TextStyle[i].Font.Size = vg.Points(8)
			ls.TextStyle[i].YAlign = draw.YTop
		}
		ls.Offset = vg.Point{X: vg.Points(3)}
		p.Add(ls)
		return nil
	}
	if err := add(starts, failureColour, "failure", maxMarkerLabels); err != nil {
		return err
	}
	return add(repairs, repairColour, "repair", 0)
}

// labelX returns where a marker label at x starts so that no other
// marker (at marks) crosses its text: right of the last marker under it.
// The text is taken as 0.85% of the axis (which ends at xMax) per
// character, about right for 8-point labels on a plot 8 inches wide.
func labelX(x float64, label string, marks []float64, xMax float64) float64 {
	width := 0.0085 * xMax * float64(utf8.RuneCountInString(label))
	for moved := true; moved; {
		moved = false
		for _, m := range marks {
			if m > x && m < x+width {
				x, moved = m, true
			}
		}
	}
	return x
}

// cdfOverlap reports whether two CDFs (sorted values over n flows each)
// would be drawn on top of each other: at nearly every fraction of flows
// their values lie within 1.5% of the axis span (pos maps a value to its
// position on the axis).
func cdfOverlap(a []float64, na int, b []float64, nb int, pos func(float64) float64, span float64) bool {
	if len(a) == 0 || len(b) == 0 || span <= 0 {
		return false
	}
	at := func(s []float64, n int, q float64) (float64, bool) {
		i := int(math.Ceil(q*float64(n))) - 1
		if i >= len(s) {
			return 0, false
		}
		return pos(s[max(i, 0)]), true
	}
	const steps = 100
	close := 0
	for k := 1; k <= steps; k++ {
		q := float64(k) / steps
		x, okA := at(a, na, q)
		y, okB := at(b, nb, q)
		if okA == okB && (!okA || math.Abs(x-y) <= 0.015*span) {
			close++
		}
	}
	return close >= steps*9/10
}
