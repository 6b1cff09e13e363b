// Package sweep runs a scenario over a grid of parameters and seeds: the
// sweep files `mrc sweep` reads (docs/sweep.md), the grid of cells they
// describe, running the cells as separate processes into an output
// directory, the Slurm job array that runs them on a cluster, and
// collecting the cells' results into one table and plots.
//
//	sw, err := sweep.Load("planes.yaml") // errors name file:line
//	cells := sw.Cells()
//	s, err := sw.Scenario(cells[3])      // a full, validated scenario
package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/openmrc/mrc/scenario"
)

// MaxCells is the largest grid a sweep may have without Force.
const MaxCells = 100_000

// maxRange bounds an A..B range, so that a typo cannot ask for billions:
// no axis has more values than a grid may have cells.
const maxRange = MaxCells

// Error is a problem with a sweep file: one line naming the file and,
// where there is one, the line.
type Error = scenario.Error

// Sweep is a parsed sweep file: a base scenario and the axes over which
// its cells vary.
type Sweep struct {
	// Name labels the sweep (default: the file's base name).
	Name string
	// File is the sweep file's path; Hash identifies its content and
	// the base scenario file's (hex SHA-256): an output directory holds
	// the cells of one hash.
	File string
	Hash string
	// Base is the base scenario's file (as the sweep file names it,
	// relative to it) or "" for a preset; Preset the preset's name.
	Base, Preset string
	// Axes are the parameters, in the file's order. The first varies
	// slowest.
	Axes []Axis
	// Plot holds collect's defaults: the metric and the axis on x.
	Plot PlotSpec

	base     *scenario.Scenario
	baseDoc  *yaml.Node // the base scenario's document (a mapping)
	groups   [][]int    // axes varying together (zip), in order of first axis
	nCells   int
	baseLine int
}

// Axis is one parameter of the grid: a key path into the scenario
// and the values it takes.
type Axis struct {
	// Path is the key path, e.g. "topology.planes", "failures[0].count".
	Path string
	// Values are the YAML values the key takes, in order; Labels say
	// them in one word each (for tables and cell names).
	Values []*yaml.Node
	Labels []string
	// Line is the line of the axis in the sweep file.
	Line int

	segs []segment
}

// PlotSpec is the plot collect draws by default.
type PlotSpec struct {
	Metric string `yaml:"metric"`
	X      string `yaml:"x"`
}

// segment is one step of a key path: a mapping key, then an optional
// list index (-1: none).
type segment struct {
	key   string
	index int
}

// Options change how a sweep file is read.
type Options struct {
	// Force allows grids larger than MaxCells.
	Force bool
}

// Load reads a sweep file and its base scenario and checks the grid's
// shape (not yet its cells: Validate).
func Load(file string, o Options) (*Sweep, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: file, Msg: err.Error()}
	}
	return Parse(data, file, o)
}

var topKeys = []string{"name", "base", "preset", "axes", "zip", "plot"}

// Parse reads a sweep from data, the content of file (relative base
// paths resolve against file's directory).
func Parse(data []byte, file string, o Options) (*Sweep, error) {
	fail := func(line int, format string, args ...any) error {
		return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := scenario.YAMLError(err)
		return nil, fail(line, "%s", msg)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fail(0, "want a YAML mapping with base (or preset) and axes (docs/sweep.md)")
	}
	root := doc.Content[0]
	sw := &Sweep{File: file, Name: strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))}
	var axesNode, zipNode, plotNode *yaml.Node
	axesLine := root.Line
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		scalar := func(dst *string) error {
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return fail(v.Line, "%s: want a single value", k.Value)
			}
			*dst = v.Value
			return nil
		}
		var err error
		switch k.Value {
		case "name":
			err = scalar(&sw.Name)
		case "base":
			err = scalar(&sw.Base)
			sw.baseLine = v.Line
		case "preset":
			err = scalar(&sw.Preset)
			sw.baseLine = v.Line
		case "axes":
			axesNode, axesLine = v, k.Line
		case "zip":
			zipNode = v
		case "plot":
			plotNode = v
		default:
			return nil, fail(k.Line, "unknown key %q in the sweep (want one of %s)", k.Value, strings.Join(topKeys, ", "))
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case sw.Base == "" && sw.Preset == "":
		return nil, fail(root.Line, "no base scenario: give base: FILE.yaml or preset: NAME")
	case sw.Base != "" && sw.Preset != "":
		return nil, fail(sw.baseLine, "give base or preset, not both")
	case axesNode == nil || axesNode.Kind == yaml.MappingNode && len(axesNode.Content) == 0 || axesNode.ShortTag() == "!!null":
		return nil, fail(axesLine, "no axes: a sweep needs at least one, e.g. axes: {seed: 1..10} (docs/sweep.md)")
	case axesNode.Kind != yaml.MappingNode:
		return nil, fail(axesNode.Line, "axes: want a mapping of key paths to lists of values, got a %s", kindName(axesNode))
	}
	if err := sw.readAxes(axesNode, fail); err != nil {
		return nil, err
	}
	if err := sw.readZip(zipNode, fail); err != nil {
		return nil, err
	}
	if plotNode != nil {
		if err := strictDecode(plotNode, &sw.Plot); err != nil {
			return nil, fail(plotNode.Line, "plot: %v (want metric and x)", err)
		}
	}
	sw.nCells = 1
	for _, g := range sw.groups {
		n := len(sw.Axes[g[0]].Values)
		if sw.nCells > MaxCells*10/n+1 { // avoid overflow; far beyond the limit anyway
			sw.nCells = MaxCells*10 + 1
			break
		}
		sw.nCells *= n
	}
	if sw.nCells > MaxCells && !o.Force {
		return nil, fail(axesLine, "the grid has %s cells, more than %d: pass --force if you mean it", cellCount(sw.nCells), MaxCells)
	}
	if err := sw.loadBase(data, fail); err != nil {
		return nil, err
	}
	return sw, nil
}

func cellCount(n int) string {
	if n > MaxCells*10 {
		return "over 1,000,000"
	}
	return strconv.Itoa(n)
}

// strictDecode decodes n into v, refusing unknown keys.
func strictDecode(n *yaml.Node, v any) error {
	data, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		_, msg := scenario.YAMLError(err)
		return errors.New(msg)
	}
	return nil
}

var pathRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])*(\.[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])*)*$`)

// readAxes reads the axes mapping: key paths to lists of values, or to
// an integer range A..B.
func (sw *Sweep) readAxes(n *yaml.Node, fail func(int, string, ...any) error) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		a := Axis{Path: k.Value, Line: k.Line}
		if !pathRE.MatchString(a.Path) {
			return fail(k.Line, "axis %q: not a key path (want e.g. topology.planes or failures[0].count)", a.Path)
		}
		if seen[a.Path] {
			return fail(k.Line, "axis %s is given twice", a.Path)
		}
		seen[a.Path] = true
		a.segs = parsePath(a.Path)
		switch {
		case v.Kind == yaml.SequenceNode:
			a.Values = v.Content
		case v.Kind == yaml.ScalarNode && strings.Contains(v.Value, ".."):
			vals, err := rangeValues(v)
			if err != nil {
				return fail(v.Line, "axis %s: %v", a.Path, err)
			}
			a.Values = vals
		default:
			return fail(v.Line, "axis %s: want a list of values ([1, 2, 4]) or a range (1..20), got a %s", a.Path, kindName(v))
		}
		if len(a.Values) == 0 {
			return fail(v.Line, "axis %s is empty: give it at least one value", a.Path)
		}
		for _, val := range a.Values {
			a.Labels = append(a.Labels, Label(val))
		}
		sw.Axes = append(sw.Axes, a)
	}
	return nil
}

// rangeValues expands "A..B" (integers, A ≤ B) into scalar nodes.
func rangeValues(v *yaml.Node) ([]*yaml.Node, error) {
	lo, hi, _ := strings.Cut(v.Value, "..")
	a, errA := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
	b, errB := strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
	switch {
	case errA != nil || errB != nil:
		return nil, fmt.Errorf("%q: a range is two integers, like 1..20", v.Value)
	case b < a:
		return nil, fmt.Errorf("%q: the range is empty (%d > %d)", v.Value, a, b)
	case b-a >= maxRange:
		return nil, fmt.Errorf("%q: a range of more than %d values", v.Value, maxRange)
	}
	out := make([]*yaml.Node, 0, b-a+1)
	for x := a; x <= b; x++ {
		out = append(out, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10), Line: v.Line, Column: v.Column})
	}
	return out, nil
}

// readZip reads the zip groups: lists of axes that advance together
// (equal lengths) instead of forming a product.
func (sw *Sweep) readZip(n *yaml.Node, fail func(int, string, ...any) error) error {
	index := map[string]int{}
	for i, a := range sw.Axes {
		index[a.Path] = i
	}
	group := make([]int, len(sw.Axes)) // axis → group+1; 0: its own
	var zips [][]int
	if n != nil && n.ShortTag() != "!!null" {
		if n.Kind != yaml.SequenceNode {
			return fail(n.Line, "zip: want a list of lists of axes, e.g. zip: [[failures[0].count, failures[0].at]]")
		}
		for _, g := range n.Content {
			if g.Kind != yaml.SequenceNode || len(g.Content) < 2 {
				return fail(g.Line, "zip: each entry is a list of two or more axes, e.g. [failures[0].count, failures[0].at]")
			}
			var members []int
			for _, e := range g.Content {
				i, ok := index[e.Value]
				switch {
				case e.Kind != yaml.ScalarNode || !ok:
					return fail(e.Line, "zip: %q is not one of the axes (%s)", e.Value, strings.Join(sw.axisNames(), ", "))
				case group[i] != 0:
					return fail(e.Line, "zip: axis %s is in two zip groups", e.Value)
				}
				first := sw.Axes[index[g.Content[0].Value]]
				if len(sw.Axes[i].Values) != len(first.Values) {
					return fail(e.Line, "zip: axes %s (%d values) and %s (%d values) must have as many values", first.Path, len(first.Values), e.Value, len(sw.Axes[i].Values))
				}
				group[i] = len(zips) + 1
				members = append(members, i)
			}
			zips = append(zips, members)
		}
	}
	done := map[int]bool{}
	for i := range sw.Axes {
		switch {
		case group[i] == 0:
			sw.groups = append(sw.groups, []int{i})
		case !done[group[i]]:
			done[group[i]] = true
			sw.groups = append(sw.groups, zips[group[i]-1])
		}
	}
	return nil
}

func (sw *Sweep) axisNames() []string {
	var out []string
	for _, a := range sw.Axes {
		out = append(out, a.Path)
	}
	return out
}

// loadBase reads the base scenario, its YAML tree, and the sweep's hash.
func (sw *Sweep) loadBase(sweepData []byte, fail func(int, string, ...any) error) error {
	var data []byte
	var err error
	if sw.Preset != "" {
		if data, err = scenario.PresetFile(sw.Preset); err != nil {
			_, err = scenario.LoadPreset(sw.Preset) // for its message
			return fail(sw.baseLine, "preset: %v", err)
		}
		sw.base, err = scenario.LoadPreset(sw.Preset)
	} else {
		path := sw.Base
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(sw.File), path)
		}
		if data, err = os.ReadFile(path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fail(sw.baseLine, "base %s: %v", path, err)
		}
		sw.base, err = scenario.Load(path)
	}
	if err != nil {
		return fail(sw.baseLine, "base scenario: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return fail(sw.baseLine, "base scenario: not a YAML document")
	}
	sw.baseDoc = doc.Content[0]
	h := sha256.New()
	h.Write(sweepData)
	h.Write([]byte{0})
	h.Write(data)
	sw.Hash = hex.EncodeToString(h.Sum(nil))
	return nil
}

// parsePath splits a key path checked by pathRE into segments.
func parsePath(p string) []segment {
	var out []segment
	for _, part := range strings.Split(p, ".") {
		key, rest, _ := strings.Cut(part, "[")
		out = append(out, segment{key: key, index: -1})
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			idx, _ := strconv.Atoi(num)
			out = append(out, segment{index: idx})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}

// Label says a value in one word: a scalar as written, a list as its
// items joined by "+" ([mrc, roce] → "mrc+roce"), a mapping as flow
// YAML; cut short (…) beyond 200 bytes.
func Label(n *yaml.Node) string {
	var b strings.Builder
	label(&b, n)
	if b.Len() > maxLabel {
		return b.String()[:maxLabel] + "…"
	}
	return b.String()
}

const maxLabel = 200

// label writes n's label to b, stopping once b is longer than maxLabel
// (aliases can make a small document a huge tree).
func label(b *strings.Builder, n *yaml.Node) {
	if b.Len() > maxLabel {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		b.WriteString(n.Value)
	case yaml.SequenceNode:
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte('+')
			}
			label(b, e)
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			label(b, n.Alias)
		}
	default:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(n.Content[i].Value + ":")
			label(b, n.Content[i+1])
		}
		b.WriteByte('}')
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return fmt.Sprintf("value %q", n.Value)
}
