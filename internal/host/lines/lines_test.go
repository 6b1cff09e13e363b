package lines

import (
	"bufio"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	in := "# header\n\n a  b\t c # trailing\n   \t\n#x\nd\n# end\n"
	r := NewReader(strings.NewReader(in), 1<<10)
	type got struct {
		line   int
		fields []string
	}
	var lines []got
	for {
		f, ok := r.Next()
		if !ok {
			break
		}
		lines = append(lines, got{r.Line(), f})
	}
	want := []got{{3, []string{"a", "b", "c"}}, {6, []string{"d"}}}
	if len(lines) != len(want) {
		t.Fatalf("got %v, want %v", lines, want)
	}
	for i := range want {
		if lines[i].line != want[i].line || !slices.Equal(lines[i].fields, want[i].fields) {
			t.Fatalf("line %d: got %v, want %v", i, lines[i], want[i])
		}
	}
	if r.Line() != 7 {
		t.Errorf("Line() after the end = %d, want 7 (lines read)", r.Line())
	}
	if r.Err() != nil {
		t.Errorf("Err() = %v at a clean end", r.Err())
	}
}

func TestReaderTooLong(t *testing.T) {
	r := NewReader(strings.NewReader("ok\n"+strings.Repeat("x", 100)+"\nlater\n"), 64)
	if f, ok := r.Next(); !ok || f[0] != "ok" {
		t.Fatalf("first line: %v %v", f, ok)
	}
	if f, ok := r.Next(); ok {
		t.Fatalf("a line over the limit gave %v", f)
	}
	if !errors.Is(r.Err(), bufio.ErrTooLong) {
		t.Fatalf("Err() = %v, want bufio.ErrTooLong", r.Err())
	}
}
