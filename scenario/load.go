package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openmrc/mrc/units"
	"go.yaml.in/yaml/v3"
)

// Error is a problem with a scenario: one line naming the file and, where
// there is one, the line.
type Error struct {
	File string
	Line int // 0: about the file as a whole
	Msg  string
}

func (e *Error) Error() string {
	switch {
	case e.File == "":
		return e.Msg
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// fsOpener opens files of an embedded file system.
type fsOpener = fs.FS

// Load reads a scenario file. Relative input paths in it (htsim files)
// are resolved against the file's directory.
func Load(file string) (*Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: file, Msg: err.Error()}
	}
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	return Parse(data, source{file: file, dir: filepath.Dir(file)}, name)
}

// Parse reads a scenario from data; src says where it came from (for
// errors and relative paths) and name is its default name.
func Parse(data []byte, src source, name string) (*Scenario, error) {
	fail := func(line int, format string, args ...any) error {
		return &Error{File: src.file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := YAMLError(err)
		return nil, fail(line, "%s", msg)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		return nil, fail(0, "empty scenario: want a YAML mapping with at least a workload (docs/scenario.md)")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fail(root.Line, "want a YAML mapping of keys (docs/scenario.md), got a %s", kindName(root))
	}
	if err := check(root, reflect.TypeFor[Scenario](), ""); err != nil {
		var ce *checkError
		if errors.As(err, &ce) {
			return nil, fail(ce.line, "%s", ce.msg)
		}
		return nil, err
	}
	s := &Scenario{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil {
		line, msg := YAMLError(err)
		return nil, fail(line, "%s", msg)
	}
	src.root = root
	s.src = src
	if s.Name == "" {
		s.Name = name
	}
	return s, nil
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

// YAMLError splits an error of the YAML decoder into the line it names
// (0 if none) and the message without it; package sweep reads its files
// with it too.
func YAMLError(err error) (int, string) {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		line, _ := strconv.Atoi(msg[m[2]:m[3]])
		return line, msg[:m[0]] + msg[m[1]:]
	}
	return 0, msg
}

// checkError is a problem found while checking the document against the
// schema.
type checkError struct {
	line int
	msg  string
}

func (e *checkError) Error() string { return e.msg }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return fmt.Sprintf("value %q", n.Value)
}

var (
	durationType  = reflect.TypeFor[Duration]()
	rateType      = reflect.TypeFor[Rate]()
	sizeType      = reflect.TypeFor[Size]()
	transportType = reflect.TypeFor[Transport]()
	partsType     = reflect.TypeFor[WorkloadParts]()
)

// check walks node against Go type t: every mapping key must be a field
// (unknown keys are errors, with the keys allowed), and every scalar must
// parse as its field's type. It gives better messages than the decoder,
// with the key's path.
func check(n *yaml.Node, t reflect.Type, at string) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.ShortTag() == "!!null" {
		return nil
	}
	bad := func(format string, args ...any) error {
		where := at
		if where == "" {
			where = "scenario"
		}
		return &checkError{n.Line, where + ": " + fmt.Sprintf(format, args...)}
	}
	scalar := func() error {
		if n.Kind != yaml.ScalarNode {
			return bad("want a single value, got a %s", kindName(n))
		}
		return nil
	}
	switch t {
	case durationType:
		if err := scalar(); err != nil {
			return err
		}
		if _, err := units.ParseDuration(n.Value); err != nil {
			return bad("%v", err)
		}
		return nil
	case rateType:
		if err := scalar(); err != nil {
			return err
		}
		if _, err := units.ParseRate(n.Value); err != nil {
			return bad("%v", err)
		}
		return nil
	case sizeType:
		if err := scalar(); err != nil {
			return err
		}
		if _, err := units.ParseSize(n.Value); err != nil {
			return bad("%v", err)
		}
		return nil
	case transportType:
		if n.Kind == yaml.ScalarNode {
			return nil // a built-in's name
		}
	case partsType:
		if n.Kind == yaml.MappingNode {
			return check(n, partsType.Elem(), at)
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping of keys, got a %s", kindName(n))
		}
		fields := map[string]reflect.StructField{}
		var names []string
		var add func(t reflect.Type)
		add = func(t reflect.Type) {
			for i := range t.NumField() {
				f := t.Field(i)
				tag := strings.Split(f.Tag.Get("yaml"), ",")
				switch {
				case f.Anonymous && slices.Contains(tag[1:], "inline"):
					add(f.Type) // its keys are the struct's own
				case tag[0] != "" && tag[0] != "-" && f.IsExported():
					fields[tag[0]] = f
					names = append(names, tag[0])
				}
			}
		}
		add(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				where := at
				if where == "" {
					where = "the scenario"
				}
				msg := fmt.Sprintf("unknown key %q in %s", k.Value, where)
				if s := closest(k.Value, names); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				} else {
					msg += " (want one of " + strings.Join(names, ", ") + ")"
				}
				return &checkError{k.Line, msg}
			}
			if err := check(v, f.Type, join(at, k.Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map: // string keys, each value checked as t's element
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping of keys, got a %s", kindName(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := check(n.Content[i+1], t.Elem(), join(at, n.Content[i].Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad("want a list, got a %s", kindName(n))
		}
		for i, e := range n.Content {
			if err := check(e, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		return scalar()
	case reflect.Bool:
		if err := scalar(); err != nil {
			return err
		}
		if n.ShortTag() != "!!bool" {
			return bad("want true or false, got %q", n.Value)
		}
		return nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		if err := scalar(); err != nil {
			return err
		}
		if v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); n.ShortTag() != "!!int" || err != nil || v > math.MaxInt32 || v < math.MinInt32 {
			return bad("want an integer, got %q", n.Value)
		}
		return nil
	case reflect.Uint64:
		if err := scalar(); err != nil {
			return err
		}
		if _, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, 64); n.ShortTag() != "!!int" || err != nil {
			return bad("want a non-negative integer, got %q", n.Value)
		}
		return nil
	case reflect.Float64:
		if err := scalar(); err != nil {
			return err
		}
		if t := n.ShortTag(); t != "!!int" && t != "!!float" {
			return bad("want a number, got %q", n.Value)
		}
		if v, err := strconv.ParseFloat(n.Value, 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("want a finite number, got %q", n.Value)
		}
		return nil
	}
	return nil
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// closest returns the name within edit distance 2 of s, if one is.
func closest(s string, names []string) string {
	best, bd := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bd {
			best, bd = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ---- scalar types -------------------------------------------------------

// UnmarshalYAML reads a duration such as "40us".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := units.ParseDuration(n.Value)
	if err != nil {
		return &Error{Line: n.Line, Msg: err.Error()}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads a rate such as "100G".
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := units.ParseRate(n.Value)
	if err != nil {
		return &Error{Line: n.Line, Msg: err.Error()}
	}
	*r = Rate(v)
	return nil
}

// UnmarshalYAML reads a size such as "2MiB".
func (z *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := units.ParseSize(n.Value)
	if err != nil {
		return &Error{Line: n.Line, Msg: err.Error()}
	}
	*z = Size(v)
	return nil
}

// UnmarshalYAML reads a transport: a built-in's name, or a mapping.
func (t *Transport) UnmarshalYAML(n *yaml.Node) error {
	t.line = n.Line
	if n.Kind == yaml.ScalarNode {
		t.Name = n.Value
		return nil
	}
	type plain Transport
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*t = Transport(p)
	t.line = n.Line
	return nil
}

// UnmarshalYAML reads one workload part (a mapping) or several (a list).
func (w *WorkloadParts) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var p WorkloadPart
		if err := n.Decode(&p); err != nil {
			return err
		}
		*w = WorkloadParts{p}
		return nil
	}
	var ps []WorkloadPart
	if err := n.Decode(&ps); err != nil {
		return err
	}
	*w = ps
	return nil
}

// UnmarshalYAML reads a workload part, remembering its line.
func (p *WorkloadPart) UnmarshalYAML(n *yaml.Node) error {
	type plain WorkloadPart
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*p = WorkloadPart(v)
	p.line = n.Line
	return nil
}

// ---- positions ----------------------------------------------------------

// line returns the line of the value at a key path such as
// "topology.hosts" or "failures[2].element" (the closest existing
// parent's line if the key is absent), or 0.
func (s *Scenario) line(keyPath string) int {
	n := s.src.root
	if n == nil {
		return 0
	}
	line := n.Line
	for _, part := range strings.Split(keyPath, ".") {
		key, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			key = part[:i]
			idx, _ = strconv.Atoi(part[i+1 : len(part)-1])
		}
		if key != "" {
			if n.Kind != yaml.MappingNode {
				return line
			}
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					k := n.Content[i]
					n, found = n.Content[i+1], true
					line = n.Line
					if n.Kind != yaml.ScalarNode {
						line = k.Line // a block's key, not its first entry
					}
					break
				}
			}
			if !found {
				return line
			}
		}
		if idx >= 0 {
			if n.Kind == yaml.MappingNode && idx == 0 { // workload: one part
				continue
			}
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

// errorf returns an Error at the line of keyPath, its message prefixed
// with the key path.
func (s *Scenario) errorf(keyPath, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if keyPath != "" {
		msg = keyPath + ": " + msg
	}
	return &Error{File: s.src.file, Line: s.line(keyPath), Msg: msg}
}

// open opens an input file named in the scenario.
func (s *Scenario) open(name string) (fs.File, string, error) {
	p := s.path(name)
	if s.src.fsys != nil && !filepath.IsAbs(name) {
		f, err := s.src.fsys.Open(p)
		return f, p, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) && isBundled(name) {
		if ef, eerr := presetFS.Open(path.Join("presets", name)); eerr == nil {
			return ef, name, nil
		}
	}
	return f, p, err
}

// path returns where name, as the scenario names it, lives: relative to the
// scenario's directory, in its file system (the presets) or on disk.
func (s *Scenario) path(name string) string {
	switch {
	case s.src.fsys != nil && !filepath.IsAbs(name):
		return path.Join(s.src.dir, name)
	case !filepath.IsAbs(name) && s.src.dir != "":
		return filepath.Join(s.src.dir, name)
	}
	return name
}

// bundledDirs are the folders of the sample inputs bundled with mrc
// (htsim's, SimAI's and ASTRA-sim's Chakra traces), as the presets name
// them: a name under one that is not on disk means the bundled sample.
var bundledDirs = []string{"htsim/", "simai/", "chakra/"}

// isBundled reports whether name lies under one of bundledDirs.
func isBundled(name string) bool {
	return slices.ContainsFunc(bundledDirs, func(d string) bool { return strings.HasPrefix(name, d) })
}

// File returns the name of the file the scenario was read from ("preset
// NAME" for a preset, "" when built in code).
func (s *Scenario) File() string { return s.src.file }

// fieldNames lists the yaml keys of struct type t, for documentation tests.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return slices.Clip(out)
}
