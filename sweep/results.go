package sweep

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/openmrc/mrc/report"
)

// WriteFiles writes the table as dir/results.csv and dir/results.json,
// each atomically.
func (t *Table) WriteFiles(dir string) error {
	for _, w := range []struct {
		name  string
		write func(io.Writer) error
	}{{"results.csv", t.WriteCSV}, {"results.json", t.WriteJSON}} {
		f, err := report.CreateFile(filepath.Join(dir, w.name))
		if err != nil {
			return err
		}
		if err := w.write(f); err != nil {
			f.Abort()
			return err
		}
		if err := f.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// WritePlot draws metric against axis x (BandPlot) into dir/plots, named
// METRIC-by-X, and returns the files written.
func (t *Table) WritePlot(dir, metric, x string) ([]string, error) {
	bp, err := t.BandPlot(metric, x)
	if err != nil {
		return nil, err
	}
	return report.WriteFiles(filepath.Join(dir, "plots"), func(tmp string) ([]string, error) {
		return bp.Write(tmp, metric+"-by-"+fileSafe(x))
	})
}

// Done returns how many cells have a result.
func (t *Table) Done() int { return t.Cells - len(t.Missing) - len(t.Failed) }

// PlotOutcome is what WritePlot did, for WriteReport: the plot of
// Metric by X went to Files, or failed with Err.
type PlotOutcome struct {
	Metric, X string
	Files     []string
	Err       error
}

// WriteReport writes what collecting dir gave: the cells and rows
// collected, the files written and the plot (unless quiet), then every
// failed cell and the missing ones (the first 20).
func (t *Table) WriteReport(w io.Writer, dir string, p PlotOutcome, quiet bool) {
	if !quiet {
		fmt.Fprintf(w, "%s: %d of %d cells collected, %d rows: %s, %s\n", t.Sweep, t.Done(), t.Cells, len(t.Rows),
			filepath.Join(dir, "results.csv"), filepath.Join(dir, "results.json"))
		if len(p.Files) > 0 {
			fmt.Fprintf(w, "plot: %s by %s: %s\n", p.Metric, p.X, strings.Join(p.Files, ", "))
		} else if p.Err != nil {
			fmt.Fprintf(w, "no plot: %v\n", p.Err)
		}
	}
	for _, f := range t.Failed {
		fmt.Fprintf(w, "  failed: cell %s: %s\n", f.Cell.ID, f.Err)
	}
	if n := len(t.Missing); n > 0 {
		fmt.Fprintf(w, "  missing: %d cells: %s\n", n, abbreviate(t.Missing, 20))
	}
}

// abbreviate joins the first n items, then says how many more.
func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, " ")
	}
	return strings.Join(items[:n], " ") + fmt.Sprintf(" … (%d more)", len(items)-n)
}

// fileSafe makes an axis path fit a file name: failures[0].count →
// failures0.count.
func fileSafe(s string) string {
	return strings.NewReplacer("[", "", "]", "", "/", "_").Replace(s)
}
