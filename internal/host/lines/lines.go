// Package lines reads the line-oriented text inputs of mrc (switch
// tables, path tables, htsim files): '#' starts a comment that runs to the
// end of the line, fields are separated by white space, and lines with no
// fields are skipped.
package lines

import (
	"bufio"
	"io"
	"strings"
)

// Reader yields the fields of each line that has any.
type Reader struct {
	sc   *bufio.Scanner
	line int
}

// NewReader reads r. A line longer than maxBytes stops the reader with
// bufio.ErrTooLong (see Err).
func NewReader(r io.Reader, maxBytes int) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxBytes)
	return &Reader{sc: sc}
}

// Next returns the fields of the next line that has any, without its
// comment. It returns false at the end of the input or on a read error.
func (r *Reader) Next() ([]string, bool) {
	for r.sc.Scan() {
		r.line++
		s := r.sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		if f := strings.Fields(s); len(f) > 0 {
			return f, true
		}
	}
	return nil, false
}

// Line is the 1-based number of the last line read: while Next returns
// true, the line its fields came from; after, the number of lines read.
func (r *Reader) Line() int { return r.line }

// Err is the error that stopped Next, or nil at a clean end of input.
func (r *Reader) Err() error { return r.sc.Err() }
