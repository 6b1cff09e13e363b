package sweep

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openmrc/mrc/report"
)

// Metrics are the numeric columns of a collected table, one per key of
// a transport's result (docs/results.md): fct_* are fct_ns's
// percentiles, drops sums every cause, bypass_ns is empty (NaN) without
// failures.
var Metrics = []string{"flows", "flows_completed", "flows_failed", "bytes_delivered",
	"fct_p50_ns", "fct_p99_ns", "fct_max_ns", "completion_ns", "ideal_ns", "goodput_fraction_of_ideal",
	"retransmits", "trims", "ecn_marks", "drops", "pfc_pauses", "qp_errors", "bypass_ns",
	"failed_data_packets", "events", "sim_time_ns", "wall_s"}

// resultJSON is what collect reads of each transport's result.
type resultJSON struct {
	Transport      string  `json:"transport"`
	Flows          float64 `json:"flows"`
	FlowsCompleted float64 `json:"flows_completed"`
	FlowsFailed    float64 `json:"flows_failed"`
	BytesDelivered float64 `json:"bytes_delivered"`
	FCT            struct {
		P50, P99, Max float64
	} `json:"fct_ns"`
	CompletionNs      float64            `json:"completion_ns"`
	IdealNs           float64            `json:"ideal_ns"`
	Goodput           float64            `json:"goodput_fraction_of_ideal"`
	Retransmits       float64            `json:"retransmits"`
	Trims             float64            `json:"trims"`
	ECNMarks          float64            `json:"ecn_marks"`
	Drops             map[string]float64 `json:"drops"`
	PFCPauses         float64            `json:"pfc_pauses"`
	QPErrors          float64            `json:"qp_errors"`
	BypassNs          *float64           `json:"bypass_ns"`
	FailedDataPackets float64            `json:"failed_data_packets"`
	Events            float64            `json:"events"`
	SimTimeNs         float64            `json:"sim_time_ns"`
	WallS             float64            `json:"wall_s"`
	StoppedBy         string             `json:"stopped_by"`
}

func (r *resultJSON) metrics() []float64 {
	drops := 0.0
	for _, n := range r.Drops {
		drops += n
	}
	bypass := math.NaN()
	if r.BypassNs != nil {
		bypass = *r.BypassNs
	}
	return []float64{r.Flows, r.FlowsCompleted, r.FlowsFailed, r.BytesDelivered,
		r.FCT.P50, r.FCT.P99, r.FCT.Max, r.CompletionNs, r.IdealNs, r.Goodput,
		r.Retransmits, r.Trims, r.ECNMarks, drops, r.PFCPauses, r.QPErrors, bypass,
		r.FailedDataPackets, r.Events, r.SimTimeNs, r.WallS}
}

// Row is one cell's result for one transport.
type Row struct {
	Cell      string
	Index     int
	Values    []string // the axes' values, in Table.Axes order
	Transport string
	Metrics   []float64 // in Metrics order; NaN: none
	StoppedBy string
}

// Table is a sweep's collected results.
type Table struct {
	Sweep string
	Axes  []string
	Plot  PlotSpec
	Rows  []Row // by cell, then transport in run order
	// Missing are the cells without a result; Failed those whose run
	// failed (with the error), each in cell order.
	Missing []string
	Failed  []Failure
	Cells   int
}

// Collect reads every cell of the sweep in dir.
func Collect(dir string) (*Table, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	t := &Table{Sweep: m.Sweep, Axes: m.Axes, Plot: m.Plot, Cells: len(m.Cells)}
	type cellOut struct {
		rows    []Row
		missing bool
		failed  string
		err     error
	}
	outs := make([]cellOut, len(m.Cells))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				mc := m.Cells[i]
				o := &outs[i]
				var cf struct {
					Hash   string `json:"sweep_hash"`
					Error  string `json:"error"`
					Report struct {
						Results []resultJSON `json:"results"`
					} `json:"report"`
				}
				data, err := os.ReadFile(CellPath(dir, Cell{ID: mc.ID}))
				if err != nil {
					if fdata, ferr := os.ReadFile(failedPath(dir, Cell{ID: mc.ID})); ferr == nil && json.Unmarshal(fdata, &cf) == nil {
						o.failed = cf.Error
						continue
					}
					if errors.Is(err, fs.ErrNotExist) {
						o.missing = true
						continue
					}
				}
				if err == nil {
					err = json.Unmarshal(data, &cf)
				}
				if err == nil && cf.Hash != m.Hash {
					err = fmt.Errorf("belongs to another sweep (hash %.12s, the directory's is %.12s)", cf.Hash, m.Hash)
				}
				if err != nil {
					o.err = fmt.Errorf("%s: %v", CellPath(dir, Cell{ID: mc.ID}), err)
					continue
				}
				for _, r := range cf.Report.Results {
					o.rows = append(o.rows, Row{Cell: mc.ID, Index: mc.Index, Values: mc.Values,
						Transport: r.Transport, Metrics: r.metrics(), StoppedBy: r.StoppedBy})
				}
			}
		}()
	}
	for i := range m.Cells {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, o := range outs {
		switch {
		case o.err != nil:
			return nil, o.err
		case o.failed != "":
			t.Failed = append(t.Failed, Failure{Cell: Cell{Index: i, ID: m.Cells[i].ID}, Err: o.failed})
		case o.missing:
			t.Missing = append(t.Missing, m.Cells[i].ID)
		}
		t.Rows = append(t.Rows, o.rows...)
	}
	return t, nil
}

// header returns the table's columns.
func (t *Table) header() []string {
	h := append([]string{"cell"}, t.Axes...)
	h = append(h, "transport")
	h = append(h, Metrics...)
	return append(h, "stopped_by")
}

func number(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// WriteCSV writes the table as CSV: a header row, then one row per
// cell and transport.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(t.header())
	rec := make([]string, 0, len(t.header()))
	for _, r := range t.Rows {
		rec = append(rec[:0], r.Cell)
		rec = append(rec, r.Values...)
		rec = append(rec, r.Transport)
		for _, v := range r.Metrics {
			rec = append(rec, number(v))
		}
		rec = append(rec, r.StoppedBy)
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the table as JSON: {"sweep", "axes", "cells",
// "missing", "failed": [{cell, error}], "rows": [{cell, AXIS…,
// transport, METRIC…, stopped_by}]}, columns in the CSV's order.
func (t *Table) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	fmt.Fprintf(bw, "{\"sweep\": %s, \"cells\": %d,\n \"axes\": [", str(t.Sweep), t.Cells)
	for i, a := range t.Axes {
		if i > 0 {
			bw.WriteString(", ")
		}
		bw.WriteString(str(a))
	}
	bw.WriteString("],\n \"missing\": [")
	for i, id := range t.Missing {
		if i > 0 {
			bw.WriteString(", ")
		}
		bw.WriteString(str(id))
	}
	bw.WriteString("],\n \"failed\": [")
	for i, f := range t.Failed {
		if i > 0 {
			bw.WriteString(", ")
		}
		fmt.Fprintf(bw, "{\"cell\": %s, \"error\": %s}", str(f.Cell.ID), str(f.Err))
	}
	bw.WriteString("],\n \"rows\": [")
	for i, r := range t.Rows {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n  {\"cell\": %s", str(r.Cell))
		for a, v := range r.Values {
			fmt.Fprintf(bw, ", %s: %s", str(t.Axes[a]), str(v))
		}
		fmt.Fprintf(bw, ", \"transport\": %s", str(r.Transport))
		for m, v := range r.Metrics {
			val := "null"
			if !math.IsNaN(v) {
				val = number(v)
			}
			fmt.Fprintf(bw, ", %s: %s", str(Metrics[m]), val)
		}
		fmt.Fprintf(bw, ", \"stopped_by\": %s}", str(r.StoppedBy))
	}
	bw.WriteString("\n ]\n}\n")
	return bw.Flush()
}

// seedAxis is the axis whose values make the spread of a plot's points.
const seedAxis = "seed"

// DefaultX returns the axis collect plots against by default: the sweep
// file's plot.x, else the first axis that is neither seed nor
// transports, else the first.
func (t *Table) DefaultX() string {
	if t.Plot.X != "" {
		return t.Plot.X
	}
	for _, a := range t.Axes {
		if a != seedAxis && a != "transports" {
			return a
		}
	}
	return t.Axes[0]
}

// DefaultMetric returns the sweep file's plot.metric, else completion_ns.
func (t *Table) DefaultMetric() string {
	if t.Plot.Metric != "" {
		return t.Plot.Metric
	}
	return "completion_ns"
}

// BandPlot draws metric against axis x: one line per transport (and per
// value of the axes other than x, seed and those of the transports), the
// median over seeds with their min–max as a band.
func (t *Table) BandPlot(metric, x string) (*report.BandPlot, error) {
	mi := slices.Index(Metrics, metric)
	if mi < 0 {
		return nil, fmt.Errorf("no metric %q (have %s)", metric, strings.Join(Metrics, ", "))
	}
	xi := slices.Index(t.Axes, x)
	if xi < 0 {
		return nil, fmt.Errorf("no axis %q (the sweep's axes: %s)", x, strings.Join(t.Axes, ", "))
	}
	// x positions: numbers if every value is one, else categories in
	// first-seen order.
	var names []string
	numeric := true
	for _, r := range t.Rows {
		if !slices.Contains(names, r.Values[xi]) {
			names = append(names, r.Values[xi])
		}
		if _, err := strconv.ParseFloat(r.Values[xi], 64); err != nil {
			numeric = false
		}
	}
	pos := func(v string) float64 {
		if numeric {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
		return float64(slices.Index(names, v))
	}
	var order []string
	groups := map[string]map[float64][]float64{}
	unfinished := map[string]int{}
	completion := slices.Index(Metrics, "completion_ns")
	for _, r := range t.Rows {
		v := r.Metrics[mi]
		if mi == completion && r.Metrics[1] < r.Metrics[0] { // flows_completed < flows: no completion time
			v = math.NaN()
		}
		label := r.Transport
		for a, val := range r.Values {
			if a != xi && t.Axes[a] != seedAxis && !strings.HasPrefix(t.Axes[a], "transports") {
				label += ", " + t.Axes[a] + "=" + val
			}
		}
		if groups[label] == nil {
			groups[label] = map[float64][]float64{}
			order = append(order, label)
		}
		if math.IsNaN(v) {
			unfinished[label]++
			continue
		}
		p := pos(r.Values[xi])
		groups[label][p] = append(groups[label][p], v)
	}
	bp := &report.BandPlot{Title: fmt.Sprintf("%s: %s by %s", t.Sweep, metric, x), XLabel: x, YLabel: metric,
		YNanoseconds: strings.HasSuffix(metric, "_ns")}
	if !numeric {
		bp.XNames = names
	}
	for _, label := range order {
		s := report.BandSeries{Label: label}
		if n := unfinished[label]; n > 0 {
			s.Label += fmt.Sprintf(" [%d runs without a value left out]", n)
		}
		xs := make([]float64, 0, len(groups[label]))
		for p := range groups[label] {
			xs = append(xs, p)
		}
		slices.Sort(xs)
		for _, p := range xs {
			vals := groups[label][p]
			slices.Sort(vals)
			s.X = append(s.X, p)
			s.Mid = append(s.Mid, median(vals))
			s.Lo = append(s.Lo, vals[0])
			s.Hi = append(s.Hi, vals[len(vals)-1])
			s.Repetitions = max(s.Repetitions, len(vals))
		}
		bp.Series = append(bp.Series, s)
	}
	bp.Series = slices.DeleteFunc(bp.Series, func(s report.BandSeries) bool { return len(s.X) == 0 })
	if len(bp.Series) == 0 {
		return nil, fmt.Errorf("no cell has a value of %s to plot", metric)
	}
	return bp, nil
}

// median of sorted values.
func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
