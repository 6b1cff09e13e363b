package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Bytes formats a byte count with a binary unit: "512 B", "256 KiB",
// "1.5 MiB", "128 GiB".
func Bytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f %s", v, units[u])
	}
	return trimZeros(fmt.Sprintf("%.2f", v)) + " " + units[u]
}

// Duration formats a number of nanoseconds with three significant
// digits: "850 ns", "42.3 µs", "1.27 ms", "1.00 s".
func Duration(ns int64) string {
	d := float64(ns)
	switch a := math.Abs(d); {
	case a < 1e3:
		return fmt.Sprintf("%.0f ns", d)
	case a < 1e6:
		return sig3(d/1e3) + " µs"
	case a < 1e9:
		return sig3(d/1e6) + " ms"
	}
	return sig3(d/1e9) + " s"
}

// Dur is Duration for a time.Duration.
func Dur(d time.Duration) string { return Duration(d.Nanoseconds()) }

// Rate formats bits per second: "100 Gb/s", "1.6 Tb/s".
func Rate(bps int64) string {
	v := float64(bps)
	switch {
	case v >= 1e12:
		return trimZeros(fmt.Sprintf("%.2f", v/1e12)) + " Tb/s"
	case v >= 1e9:
		return trimZeros(fmt.Sprintf("%.2f", v/1e9)) + " Gb/s"
	}
	return trimZeros(fmt.Sprintf("%.2f", v/1e6)) + " Mb/s"
}

// Count formats an integer with thousands separators: "12,345".
func Count[T ~int | ~int64 | ~uint64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func sig3(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return trimZeros(fmt.Sprintf("%.1f", v))
	}
	return trimZeros(fmt.Sprintf("%.2f", v))
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
