// Package metrics exposes MRC counters to Prometheus: a writer of the
// Prometheus text exposition format (version 0.0.4), written by hand on
// the standard library, the per-QP, per-endpoint and per-port metric
// families of an MRC host or switch, and an http.Handler that serves them.
//
// A host builds a Snapshot (QPOf, EndpointOf, and its own port counters)
// when scraped; Handler renders it. The metric names and labels are listed
// in docs/trace.md#metrics.
package metrics

import (
	"errors"
	"io"
	"math"
	"strconv"
)

// Label is one name="value" pair of a sample.
type Label struct{ Name, Value string }

// Type is a metric family's type.
type Type string

const (
	Counter Type = "counter"
	Gauge   Type = "gauge"
)

// A Writer writes the Prometheus text exposition format: for each metric
// family a # HELP and a # TYPE line, then its samples. The caller writes
// all samples of a family right after its Family call. Errors are sticky:
// Err returns the first.
type Writer struct {
	w      io.Writer
	buf    []byte
	err    error
	family string
	seen   map[string]bool
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, seen: map[string]bool{}} }

// ErrFamily means a family was started twice, or a sample written outside
// its family; the output would not parse.
var ErrFamily = errors.New("metrics: samples of a family must follow its Family call, once")

// Family starts the metric family name.
func (w *Writer) Family(name string, typ Type, help string) {
	if w.seen[name] {
		w.fail(ErrFamily)
		return
	}
	w.seen[name] = true
	w.family = name
	b := append(w.buf[:0], "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = appendEscaped(b, help, false)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	b = append(b, '\n')
	w.flush(b)
}

// Sample writes one sample of the current family: name is the family's
// name (a counter's name ends in _total by convention, which the family
// name includes).
func (w *Writer) Sample(name string, v float64, labels ...Label) {
	w.sample(name, labels, func(b []byte) []byte {
		switch {
		case math.IsNaN(v):
			return append(b, "NaN"...)
		case math.IsInf(v, 1):
			return append(b, "+Inf"...)
		case math.IsInf(v, -1):
			return append(b, "-Inf"...)
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	})
}

// SampleUint writes a sample with an integer value, exactly.
func (w *Writer) SampleUint(name string, v uint64, labels ...Label) {
	w.sample(name, labels, func(b []byte) []byte { return strconv.AppendUint(b, v, 10) })
}

func (w *Writer) sample(name string, labels []Label, value func([]byte) []byte) {
	if name != w.family {
		w.fail(ErrFamily)
		return
	}
	b := append(w.buf[:0], name...)
	if len(labels) > 0 {
		b = append(b, '{')
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l.Name...)
			b = append(b, `="`...)
			b = appendEscaped(b, l.Value, true)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = value(b)
	b = append(b, '\n')
	w.flush(b)
}

// Err returns the first error met.
func (w *Writer) Err() error { return w.err }

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *Writer) flush(b []byte) {
	w.buf = b
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

// appendEscaped escapes backslash and newline (HELP text), and also the
// double quote in label values.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// ValidName reports whether s is a valid metric or label name.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
