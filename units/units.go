// Package units is the one grammar for the sizes, rates and durations that
// users type: on the command line, in scenario files and in mrc switch
// tables. The same string means the same thing everywhere (docs/cli.md,
// "Units"):
//
//   - sizes are bytes: a plain number, or KiB, MiB, GiB, TiB (powers of
//     1024) or kB, MB, GB, TB (powers of 1000). A bare K, M, G or T is
//     refused as ambiguous, with both spellings suggested;
//   - rates are bits per second, with a k, M, G or T prefix (powers of
//     1000) and optionally b/s, bps, bit, bit/s or bits/s after it. A rate
//     needs a unit; B/s and Bps (bytes) are refused;
//   - durations are Go durations (ns, us or µs, ms, s, m, h), never
//     negative, and a plain number needs a unit unless it is 0.
//
// Spaces are ignored ("12 kB") and a number may have _ separators
// ("1_000_000"), a fraction ("1.5MiB") or an exponent ("25e9b/s").
// Errors quote the input and say what was wanted, in one line; the caller
// adds where it was (file:line, flag name). The package is a leaf: it
// imports only the standard library.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax is matched (errors.Is) by the errors for input that is not a
// size, rate or duration at all, as opposed to one that is ambiguous,
// negative or out of range.
var ErrSyntax = errors.New("units: syntax")

// syntaxError is an error that matches ErrSyntax.
type syntaxError struct{ msg string }

func (e *syntaxError) Error() string        { return e.msg }
func (e *syntaxError) Is(target error) bool { return target == ErrSyntax }

func syntaxf(format string, args ...any) error {
	return &syntaxError{fmt.Sprintf(format, args...)}
}

// MaxSize is the largest size ParseSize accepts: 1 EiB, less one byte.
const MaxSize = 1<<60 - 1

// sizeUnits are the size suffixes and their multipliers. The binary ones
// match in any case ("mib"); the decimal ones only as written.
var sizeUnits = []struct {
	suffix string
	bytes  uint64
	binary bool
}{
	{"KiB", 1 << 10, true}, {"MiB", 1 << 20, true}, {"GiB", 1 << 30, true}, {"TiB", 1 << 40, true},
	{"Ki", 1 << 10, true}, {"Mi", 1 << 20, true}, {"Gi", 1 << 30, true}, {"Ti", 1 << 40, true},
	{"kB", 1e3, false}, {"KB", 1e3, false}, {"MB", 1e6, false}, {"GB", 1e9, false}, {"TB", 1e12, false},
	{"B", 1, false},
}

// ParseSize parses a size in bytes: "4096", "256KiB", "2MB", "1.5MiB",
// "12 kB". The result is a whole number of bytes from 0 to MaxSize.
func ParseSize(s string) (uint64, error) {
	num, unit := split(s)
	mult, ok := sizeUnit(unit)
	if !ok {
		if p := strings.ToUpper(unit); p != "" && strings.Contains("KMGT", p[:1]) && bareSizeUnit(p[1:]) && isNumber(num) {
			return 0, ambiguous(s, num, unit)
		}
		return 0, syntaxf("%q is not a size (want e.g. 4096, 256KiB, 2MB, 1GiB)", s)
	}
	if strings.HasPrefix(num, "-") {
		return 0, fmt.Errorf("%q: a size cannot be negative", s)
	}
	whole, frac, err := parseNumber(num)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q: want a size from 0 to 1 EiB", s)
	}
	if err != nil {
		return 0, syntaxf("%q is not a size (want e.g. 4096, 256KiB, 2MB, 1GiB)", s)
	}
	if frac == nil {
		if whole > MaxSize/mult {
			return 0, fmt.Errorf("%q: want a size from 0 to 1 EiB", s)
		}
		return whole * mult, nil
	}
	v := *frac * float64(mult)
	switch {
	case v >= 1<<60:
		return 0, fmt.Errorf("%q: want a size from 0 to 1 EiB", s)
	case v != math.Trunc(v):
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return uint64(v), nil
}

// sizeUnit returns the multiplier of a size suffix ("" is bytes).
func sizeUnit(unit string) (uint64, bool) {
	if unit == "" {
		return 1, true
	}
	for _, u := range sizeUnits {
		if unit == u.suffix || u.binary && strings.EqualFold(unit, u.suffix) {
			return u.bytes, true
		}
	}
	return 0, false
}

// bareSizeUnit reports whether rest, what follows a K, M, G or T prefix
// (upper-cased), leaves it unclear whether 1000 or 1024 is meant: nothing,
// or a b that could be bits or bytes.
func bareSizeUnit(rest string) bool { return rest == "" || rest == "B" }

// ambiguous is the error for a size like "2M" (number num, unit unit):
// it shows both spellings and, when they are whole, the byte counts they
// mean.
func ambiguous(s, num, unit string) error {
	prefix := strings.ToUpper(unit[:1])
	dec := prefix // MB, GB, TB, but kB
	if prefix == "K" {
		dec = "k"
	}
	bin, _ := sizeUnit(prefix + "iB")
	decimal, _ := sizeUnit(dec + "B")
	return fmt.Errorf("%q: say %s%siB%s or %s%sB%s; a bare %s is ambiguous",
		s, num, prefix, count(num, bin), num, dec, count(num, decimal), unit)
}

// count is " (2,097,152 bytes)" for num times mult when that is a whole
// number of bytes, else "".
func count(num string, mult uint64) string {
	whole, frac, err := parseNumber(num)
	if err != nil {
		return ""
	}
	v := float64(whole) * float64(mult)
	if frac != nil {
		v = *frac * float64(mult)
	}
	if v != math.Trunc(v) || v >= 1<<60 {
		return ""
	}
	return " (" + group(uint64(v)) + " bytes)"
}

// group formats n with a comma between groups of three digits:
// 2,097,152.
func group(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// rateSuffixes are what may follow a rate's number and prefix, matched in
// any case except that a capital B is bytes.
var rateSuffixes = []string{"bits/s", "bit/s", "bits", "bit", "b/s", "bps"}

// MaxRate is the largest rate ParseRate accepts, in bits per second.
const MaxRate = 1e15

// MinRate is the smallest rate ParseRate accepts: anything slower is
// surely a typo for a faster one.
const MinRate = 1e6

// ParseRate parses a rate in bits per second: "100G", "400Gb/s",
// "800Gbps", "2.5Gbit", "25e9b/s". It is from MinRate to MaxRate.
func ParseRate(s string) (int64, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	unit := false
	for _, suf := range rateSuffixes {
		if n := len(t) - len(suf); n >= 0 && strings.EqualFold(t[n:], suf) {
			if (suf == "b/s" || suf == "bps") && t[n] == 'B' {
				return 0, fmt.Errorf("%q is bytes per second: write rates in bits, like 100Gb/s", s)
			}
			t, unit = t[:n], true
			break
		}
	}
	mult := 1.0
	if n := len(t); n > 0 {
		if m := ratePrefix(t[n-1] | 0x20); m != 0 {
			mult, t, unit = m, t[:n-1], true
		}
	}
	v, err := parseFloat(t)
	switch {
	case err != nil:
		return 0, syntaxf("%q is not a rate (want e.g. 100G, 400Gb/s, 800Gbps)", s)
	case !unit:
		return 0, syntaxf("%q: a rate needs a unit, like 100G or 400Gb/s", s)
	case v <= 0 || v*mult > MaxRate:
		return 0, fmt.Errorf("%q: want a positive rate up to 1000T", s)
	case v*mult < MinRate:
		return 0, fmt.Errorf("%q: a rate below 1 Mb/s is surely a mistake", s)
	}
	return int64(math.Round(v * mult)), nil
}

// ratePrefix is the multiplier of a rate prefix in lower case (k, m, g,
// t), 0 if c is not one.
func ratePrefix(c byte) float64 {
	switch c {
	case 'k':
		return 1e3
	case 'm':
		return 1e6
	case 'g':
		return 1e9
	case 't':
		return 1e12
	}
	return 0
}

// ParseDuration parses a duration: "500ns", "40us", "40µs", "1.5ms",
// "2s", "1m30s", or "0". It is never negative.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	if t == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		if _, nerr := parseFloat(t); nerr == nil {
			return 0, syntaxf("%q: a duration needs a unit (ns, us, ms, s), like 40us", s)
		}
		return 0, syntaxf("%q is not a duration (want e.g. 500ns, 40us, 1.5ms, 2s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: a duration cannot be negative", s)
	}
	return d, nil
}

// split removes the spaces from s and splits it into its number and its
// unit: the trailing letters (and slashes).
func split(s string) (num, unit string) {
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	i := len(t)
	for i > 0 && isUnitByte(t[i-1]) {
		i--
	}
	return t[:i], t[i:]
}

func isUnitByte(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '/' }

// parseNumber parses a plain decimal number with optional _ separators.
// A whole number comes back exactly in whole; one with a fraction or an
// exponent in frac.
func parseNumber(s string) (whole uint64, frac *float64, err error) {
	t := strings.ReplaceAll(s, "_", "")
	if t == "" || strings.Trim(t, "0123456789") == "" {
		v, err := strconv.ParseUint(t, 10, 64)
		return v, nil, err
	}
	v, err := parseFloat(t)
	if err != nil || v < 0 {
		return 0, nil, errors.New("not a number")
	}
	return 0, &v, nil
}

// isNumber reports whether num is a number ParseSize can scale.
func isNumber(num string) bool {
	_, _, err := parseNumber(num)
	return err == nil
}

// parseFloat parses a decimal number with optional _ separators, a
// fraction and an exponent; unlike strconv.ParseFloat it refuses hex,
// infinities and NaN.
func parseFloat(s string) (float64, error) {
	t := strings.ReplaceAll(s, "_", "")
	if t == "" || strings.Trim(t, "0123456789.eE+-") != "" || !strings.ContainsAny(t[:1], "0123456789.+-") {
		return 0, errors.New("not a number")
	}
	return strconv.ParseFloat(t, 64)
}
