// Package golden runs data-driven transcript tests (after etcd raft's
// interaction tests). A test file is a sequence of cases:
//
//	# comments and blank lines between cases are ignored
//	verb key=value key=value
//	verb ...
//	----
//	the output the commands printed, one line per event
//
// A case ends at the first blank line after its "----". Run replays every
// case through a handler and compares the output; with -rewrite it writes
// the actual output back into the file instead, for review with git diff.
package golden

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden transcripts with the actual output")

// Cmd is one command line of a case.
type Cmd struct {
	Verb string
	Args map[string]string
	Line int // 1-based line in the file, for error messages
	keys []string
}

// Has reports whether the command has argument key.
func (c Cmd) Has(key string) bool { _, ok := c.Args[key]; return ok }

// Int returns integer argument key, or def when absent. A malformed value
// fails the test.
func (c Cmd) Int(t testing.TB, key string, def int) int {
	v, ok := c.Args[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("line %d: %s=%q: %v", c.Line, key, v, err)
	}
	return n
}

// Duration returns duration argument key (Go syntax, e.g. 10us), or def.
func (c Cmd) Duration(t testing.TB, key string, def time.Duration) time.Duration {
	v, ok := c.Args[key]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("line %d: %s=%q: %v", c.Line, key, v, err)
	}
	return d
}

// Str returns argument key, or def.
func (c Cmd) Str(key, def string) string {
	if v, ok := c.Args[key]; ok {
		return v
	}
	return def
}

// String renders the command as written.
func (c Cmd) String() string {
	var b strings.Builder
	b.WriteString(c.Verb)
	for _, k := range c.keys {
		fmt.Fprintf(&b, " %s=%s", k, c.Args[k])
	}
	return b.String()
}

type tcase struct {
	cmds       []Cmd
	start, end int // lines [start,end) hold the expected output
}

// Run replays the transcript at path. handle executes one command and returns
// what it printed (may be empty or several lines).
func Run(t *testing.T, path string, handle func(t *testing.T, c Cmd) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	cases := parse(t, path, lines)
	actual := make([]string, len(cases))
	for i, tc := range cases {
		var out strings.Builder
		for _, c := range tc.cmds {
			s := handle(t, c)
			if s != "" {
				out.WriteString(strings.TrimRight(s, "\n"))
				out.WriteString("\n")
			}
		}
		got := strings.TrimRight(out.String(), "\n")
		if got == "" {
			got = "ok"
		}
		actual[i] = got
		want := strings.Join(lines[tc.start:tc.end], "\n")
		if got != want && !*rewrite {
			t.Errorf("%s:%d: output differs\n--- want\n%s\n--- got\n%s", path, tc.cmds[0].Line, want, got)
		}
	}
	if *rewrite {
		var out []string
		prev := 0
		for i, tc := range cases {
			out = append(out, lines[prev:tc.start]...)
			out = append(out, actual[i])
			prev = tc.end
		}
		out = append(out, lines[prev:]...)
		text := strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parse(t *testing.T, path string, lines []string) []tcase {
	var cases []tcase
	var cur []Cmd
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			if len(cur) > 0 && line == "" {
				t.Fatalf("%s:%d: blank line before ----", path, i+1)
			}
		case line == "----":
			if len(cur) == 0 {
				t.Fatalf("%s:%d: ---- without commands", path, i+1)
			}
			start := i + 1
			end := start
			for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
				end++
			}
			cases = append(cases, tcase{cmds: cur, start: start, end: end})
			cur = nil
			i = end
		default:
			f := strings.Fields(line)
			c := Cmd{Verb: f[0], Args: map[string]string{}, Line: i + 1}
			for _, kv := range f[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					v = ""
				}
				c.Args[k] = v
				c.keys = append(c.keys, k)
			}
			cur = append(cur, c)
		}
	}
	if len(cur) > 0 {
		t.Fatalf("%s: commands at end of file without ----", path)
	}
	return cases
}
