package units

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParse: no input panics any parser; every error is one line that
// starts with the input quoted; whatever parses lies in its range and
// reads back the same when written in plain units.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"4096", "2MiB", "2MB", "2M", "1.5KiB", "12 kB", "1e6B", "100G", "400Gb/s",
		"10GB/s", "25e9b/s", "40us", "40µs", "-1s", "1m30s", "0", "", "1_000", "0x10", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(what string, err error) {
			if err == nil {
				return
			}
			if msg := err.Error(); !strings.HasPrefix(msg, strconv.Quote(s)) || strings.Contains(msg, "\n") {
				t.Fatalf("%s(%q): error %q does not start with the quoted input on one line", what, s, msg)
			}
		}
		if n, err := ParseSize(s); err == nil {
			if n > MaxSize {
				t.Fatalf("ParseSize(%q) = %d > MaxSize", s, n)
			}
			if back, err := ParseSize(strconv.FormatUint(n, 10)); err != nil || back != n {
				t.Fatalf("ParseSize(%q) = %d, but %d reads back as %d, %v", s, n, n, back, err)
			}
		} else {
			check("ParseSize", err)
		}
		if r, err := ParseRate(s); err == nil {
			if r < MinRate || r > MaxRate {
				t.Fatalf("ParseRate(%q) = %d, out of range", s, r)
			}
			if back, err := ParseRate(strconv.FormatInt(r, 10) + "bps"); err != nil || back != r {
				t.Fatalf("ParseRate(%q) = %d, but %dbps reads back as %d, %v", s, r, r, back, err)
			}
		} else {
			check("ParseRate", err)
		}
		if d, err := ParseDuration(s); err == nil {
			if d < 0 {
				t.Fatalf("ParseDuration(%q) = %v < 0", s, d)
			}
			if back, err := ParseDuration(d.String()); err != nil || back != d {
				t.Fatalf("ParseDuration(%q) = %v, but %v reads back as %v, %v", s, d, d, back, err)
			}
		} else {
			check("ParseDuration", err)
		}
	})
}
