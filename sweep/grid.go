package sweep

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/openmrc/mrc/scenario"
)

// Cell is one point of the grid: an index (0 .. Len()-1) and which value
// of each axis it takes.
type Cell struct {
	Index int
	// ID names the cell's files: the index, zero-padded ("0007").
	ID string
	// Values[a] is the index of the cell's value in Axes[a].Values.
	Values []int
}

// Len returns the number of cells: the product of the axes' lengths,
// zipped axes counting once.
func (sw *Sweep) Len() int { return sw.nCells }

// Cell returns cell i (0 ≤ i < Len()). The first axis varies slowest.
func (sw *Sweep) Cell(i int) Cell {
	c := Cell{Index: i, ID: sw.cellID(i), Values: make([]int, len(sw.Axes))}
	rest := i
	for g := len(sw.groups) - 1; g >= 0; g-- {
		members := sw.groups[g]
		n := len(sw.Axes[members[0]].Values)
		for _, a := range members {
			c.Values[a] = rest % n
		}
		rest /= n
	}
	return c
}

// Cells returns every cell, in index order.
func (sw *Sweep) Cells() []Cell {
	out := make([]Cell, sw.nCells)
	for i := range out {
		out[i] = sw.Cell(i)
	}
	return out
}

func (sw *Sweep) cellID(i int) string {
	width := max(4, len(strconv.Itoa(sw.nCells-1)))
	return fmt.Sprintf("%0*d", width, i)
}

// Labels returns the cell's value of each axis in one word.
func (sw *Sweep) Labels(c Cell) []string {
	out := make([]string, len(sw.Axes))
	for a, v := range c.Values {
		out[a] = sw.Axes[a].Labels[v]
	}
	return out
}

// Describe says which values the cell takes: "topology.planes=2 seed=3".
func (sw *Sweep) Describe(c Cell) string {
	var parts []string
	for a, l := range sw.Labels(c) {
		parts = append(parts, sw.Axes[a].Path+"="+l)
	}
	return strings.Join(parts, " ")
}

// Plan returns cell c's scenario, checked and built for running: the
// base scenario's YAML with the cell's values in place, read by the
// scenario loader. A problem is an *Error naming the sweep file, the
// line of the value at fault, the axis and the cell.
func (sw *Sweep) Plan(c Cell, o scenario.Overrides) (*scenario.Plan, error) {
	all := make([]int, len(sw.Axes))
	for i := range all {
		all[i] = i
	}
	p, err := sw.plan(c, all, o)
	if err == nil {
		return p, nil
	}
	return nil, sw.blame(c, err)
}

// plan builds cell c with only the given axes applied.
func (sw *Sweep) plan(c Cell, axes []int, o scenario.Overrides) (*scenario.Plan, error) {
	root := clone(sw.baseDoc)
	for _, a := range axes {
		ax := &sw.Axes[a]
		if err := set(root, ax.segs, ax.Values[c.Values[a]]); err != nil {
			return nil, &axisError{axis: a, msg: err.Error()}
		}
	}
	data, err := yaml.Marshal(root)
	if err != nil {
		return nil, err
	}
	s, err := sw.base.Derive(data, sw.base.Name)
	if err != nil {
		return nil, err
	}
	return s.Build(o)
}

// axisError is a key path that does not fit the base scenario.
type axisError struct {
	axis int
	msg  string
}

func (e *axisError) Error() string { return e.msg }

// blame turns the error of cell c into one naming the axis at fault: the
// first whose value alone breaks the base scenario, or all of them when
// only their combination does. A base scenario that fails by itself is
// reported as such.
func (sw *Sweep) blame(c Cell, err error) error {
	var ae *axisError
	if errors.As(err, &ae) {
		return sw.cellError(c, []int{ae.axis}, ae.msg)
	}
	if _, berr := sw.plan(c, nil, scenario.Overrides{}); berr != nil {
		return &Error{File: sw.File, Line: sw.baseLine, Msg: fmt.Sprintf("the base scenario fails whatever the axes: %v", berr)}
	}
	for a := range sw.Axes {
		if _, aerr := sw.plan(c, []int{a}, scenario.Overrides{}); aerr != nil {
			return sw.cellError(c, []int{a}, message(aerr))
		}
	}
	all := make([]int, len(sw.Axes))
	for i := range all {
		all[i] = i
	}
	return sw.cellError(c, all, message(err))
}

// message is a scenario error's text without its file and line, which
// refer to the generated cell document.
func message(err error) string {
	var se *scenario.Error
	if errors.As(err, &se) {
		return se.Msg
	}
	return err.Error()
}

// cellError is an *Error at the line of the first of axes' values in
// cell c.
func (sw *Sweep) cellError(c Cell, axes []int, msg string) error {
	var names []string
	for _, a := range axes {
		ax := &sw.Axes[a]
		names = append(names, fmt.Sprintf("%s = %s", ax.Path, ax.Labels[c.Values[a]]))
	}
	first := &sw.Axes[axes[0]]
	what := "axis " + names[0]
	if len(names) > 1 {
		what = "axes " + strings.Join(names, ", ") + " together"
	}
	return &Error{File: sw.File, Line: first.Values[c.Values[axes[0]]].Line,
		Msg: fmt.Sprintf("%s, cell %s (%s): %s", what, c.ID, sw.Describe(c), msg)}
}

// Validate checks every cell, before anything runs, and returns the
// first cell's error.
func (sw *Sweep) Validate() error {
	_, err := sw.Check()
	return err
}

// set puts a copy of val at the key path segs of the document root,
// creating missing mapping keys. A list index must exist; index 0 of a
// mapping is the mapping itself (a workload of one part).
func set(root *yaml.Node, segs []segment, val *yaml.Node) error {
	n := root
	at := ""
	for i, sg := range segs {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if sg.key != "" {
			at = join(at, sg.key)
			if n.Kind != yaml.MappingNode {
				return fmt.Errorf("%s: the base scenario's %s is not a mapping of keys", at, parent(at))
			}
			child := lookup(n, sg.key)
			if child == nil {
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				if i+1 < len(segs) && segs[i+1].key == "" {
					return fmt.Errorf("%s: the base scenario has no %s to index", at, at)
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: sg.key}, child)
			}
			n = child
			continue
		}
		at = fmt.Sprintf("%s[%d]", at, sg.index)
		switch {
		case n.Kind == yaml.MappingNode && sg.index == 0:
			// one workload part written as a mapping
		case n.Kind != yaml.SequenceNode:
			return fmt.Errorf("%s: the base scenario's %s is not a list", at, strings.TrimSuffix(at, fmt.Sprintf("[%d]", sg.index)))
		case sg.index >= len(n.Content):
			return fmt.Errorf("%s: the base scenario's list has %d entries (indexes from 0)", at, len(n.Content))
		default:
			n = n.Content[sg.index]
		}
	}
	*n = *clone(val)
	return nil
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func parent(at string) string {
	if i := strings.LastIndexByte(at, '.'); i >= 0 {
		return at[:i]
	}
	return "document"
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// clone copies a YAML tree, without its comments.
func clone(n *yaml.Node) *yaml.Node {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, e := range n.Content {
			c.Content[i] = clone(e)
		}
	}
	return &c
}
