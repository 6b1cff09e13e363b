package sweep

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openmrc/mrc/report"
)

// An output directory holds:
//
//	DIR/sweep.json           the manifest: the sweep's name, file, hash, axes and cells
//	DIR/cells/ID.json        a finished cell: CellFile with the report
//	DIR/cells/ID.failed.json a failed cell: CellFile with the error
const (
	manifestName = "sweep.json"
	cellsDir     = "cells"
	failedSuffix = ".failed.json"
)

// Manifest describes a sweep's cells, so that collect needs only the
// output directory.
type Manifest struct {
	Sweep string   `json:"sweep"`
	File  string   `json:"file"`
	Hash  string   `json:"hash"`
	Axes  []string `json:"axes"`
	Plot  PlotSpec `json:"plot"`
	Cells []struct {
		Index  int      `json:"index"`
		ID     string   `json:"id"`
		Values []string `json:"values"`
	} `json:"cells"`
}

// CellFile is what a cell writes: its place in the grid, and either the
// report of its run (docs/results.md) or the error that ended it.
type CellFile struct {
	SweepHash string          `json:"sweep_hash"`
	Index     int             `json:"index"`
	ID        string          `json:"id"`
	Axes      []string        `json:"axes"`
	Values    []string        `json:"values"`
	Error     string          `json:"error,omitempty"`
	Report    json.RawMessage `json:"report,omitempty"`
}

// MismatchError refuses an output directory that holds another sweep's
// cells.
type MismatchError struct {
	Dir, Found, FoundFile, Want, WantFile string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s holds the cells of another sweep (%s, hash %.12s; this is %s, hash %.12s): give another --out, or remove %s and %s",
		e.Dir, e.FoundFile, e.Found, e.WantFile, e.Want, filepath.Join(e.Dir, manifestName), filepath.Join(e.Dir, cellsDir))
}

// CellPath returns the file of a finished cell c in dir.
func CellPath(dir string, c Cell) string { return filepath.Join(dir, cellsDir, c.ID+".json") }

func failedPath(dir string, c Cell) string {
	return filepath.Join(dir, cellsDir, c.ID+failedSuffix)
}

// Finished reports whether cell c has its result in dir (a regular
// file: cells are written atomically, so one that exists is whole).
func Finished(dir string, c Cell) bool {
	fi, err := os.Stat(CellPath(dir, c))
	return err == nil && fi.Mode().IsRegular()
}

// Prepare readies dir for the sweep's cells: it creates dir/cells,
// refuses a directory holding another sweep's cells (*MismatchError),
// and writes the manifest if it is not there.
func (sw *Sweep) Prepare(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, cellsDir), 0o755); err != nil {
		return fmt.Errorf("--out: %w", unwrap(err))
	}
	var m Manifest
	switch data, err := os.ReadFile(filepath.Join(dir, manifestName)); {
	case err == nil:
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("%s: %v", filepath.Join(dir, manifestName), err)
		}
		if m.Hash != sw.Hash {
			return &MismatchError{Dir: dir, Found: m.Hash, FoundFile: m.File, Want: sw.Hash, WantFile: sw.File}
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--out: %w", unwrap(err))
	}
	if found, file := anyCellHash(dir); found != "" && found != sw.Hash {
		return &MismatchError{Dir: dir, Found: found, FoundFile: file, Want: sw.Hash, WantFile: sw.File}
	}
	return sw.writeManifest(dir)
}

// anyCellHash returns the sweep hash of a cell file in dir, if there is
// one, and the cell file's name.
func anyCellHash(dir string) (string, string) {
	files, _ := filepath.Glob(filepath.Join(dir, cellsDir, "*.json"))
	for _, f := range files {
		var c struct {
			Hash string `json:"sweep_hash"`
		}
		if data, err := os.ReadFile(f); err == nil && json.Unmarshal(data, &c) == nil && c.Hash != "" {
			return c.Hash, "the cell " + f
		}
	}
	return "", ""
}

func (sw *Sweep) writeManifest(dir string) error {
	m := Manifest{Sweep: sw.Name, File: sw.File, Hash: sw.Hash, Axes: sw.axisNames(), Plot: sw.Plot}
	m.Cells = make([]struct {
		Index  int      `json:"index"`
		ID     string   `json:"id"`
		Values []string `json:"values"`
	}, sw.nCells)
	for i := range m.Cells {
		c := sw.Cell(i)
		m.Cells[i].Index, m.Cells[i].ID, m.Cells[i].Values = i, c.ID, sw.Labels(c)
	}
	return writeJSON(filepath.Join(dir, manifestName), m)
}

// writeJSON writes v to file atomically (report.CreateFile), indented
// unless it is a cell's (which hold large reports).
func writeJSON(file string, v any) error {
	f, err := report.CreateFile(file)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	if _, cell := v.(CellFile); !cell {
		enc.SetIndent("", " ")
	}
	if err := enc.Encode(v); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s: %v", file, err)
	}
	if err := bw.Flush(); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s: %v", file, err)
	}
	return f.Commit()
}

// ReadManifest reads the manifest of an output directory.
func ReadManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: not a sweep's output directory (no %s: mrc sweep run or mrc sweep slurm writes it)", dir, manifestName)
	}
	if err != nil {
		return nil, unwrap(err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, manifestName), err)
	}
	return &m, nil
}

// cellFile returns the CellFile of cell c, without a report.
func (sw *Sweep) cellFile(c Cell) CellFile {
	return CellFile{SweepHash: sw.Hash, Index: c.Index, ID: c.ID, Axes: sw.axisNames(), Values: sw.Labels(c)}
}

// writeFailed records that cell c failed with msg (unless it has
// finished since).
func (sw *Sweep) writeFailed(dir string, c Cell, msg string) error {
	if Finished(dir, c) {
		return nil
	}
	cf := sw.cellFile(c)
	cf.Error = msg
	return writeJSON(failedPath(dir, c), cf)
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
