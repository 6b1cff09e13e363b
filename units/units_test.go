package units

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"0", 0}, {"4096", 4096}, {"1_000_000", 1e6}, {"4096B", 4096}, {"12 kB", 12000}, {"12KB", 12000},
		{"2MB", 2_000_000}, {"1GB", 1e9}, {"3TB", 3e12}, {"1e6", 1e6}, {"1e6B", 1e6},
		{"256KiB", 256 << 10}, {"2MiB", 2 << 20}, {"1.5MiB", 3 << 19}, {"1GiB", 1 << 30}, {"1TiB", 1 << 40},
		{"2mib", 2 << 20}, {"2MIB", 2 << 20}, {"64Mi", 64 << 20}, {"4Ki", 4096}, {" 8 GiB ", 8 << 30},
	} {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if got, err := ParseSize("1152921504606846975"); err != nil || got != MaxSize {
		t.Errorf("MaxSize exactly: %d, %v", got, err)
	}
}

func TestParseSizeErrors(t *testing.T) {
	for _, c := range []struct {
		in, want string
		syntax   bool
	}{
		{"2M", `"2M": say 2MiB (2,097,152 bytes) or 2MB (2,000,000 bytes); a bare M is ambiguous`, false},
		{"2K", `"2K": say 2KiB (2,048 bytes) or 2kB (2,000 bytes); a bare K is ambiguous`, false},
		{"2k", `"2k": say 2KiB (2,048 bytes) or 2kB (2,000 bytes)`, false},
		{"1.5G", `"1.5G": say 1.5GiB (1,610,612,736 bytes) or 1.5GB (1,500,000,000 bytes)`, false},
		{"1.3K", `"1.3K": say 1.3KiB or 1.3kB (1,300 bytes); a bare K is ambiguous`, false},
		{"4Mb", `"4Mb": say 4MiB (4,194,304 bytes) or 4MB (4,000,000 bytes); a bare Mb is ambiguous`, false},
		{"1gb", `"1gb": say 1GiB`, false},
		{"3T", `a bare T is ambiguous`, false},
		{"12XB", `"12XB" is not a size (want e.g. 4096, 256KiB, 2MB, 1GiB)`, true},
		{"x", `"x" is not a size`, true},
		{"", `"" is not a size`, true},
		{"M", `"M" is not a size`, true},
		{"0x10", `is not a size`, true},
		{"inf", `is not a size`, true},
		{"NaN", `is not a size`, true},
		{"1..5MB", `is not a size`, true},
		{"-1", `"-1": a size cannot be negative`, false},
		{"-1KiB", `cannot be negative`, false},
		{"1.5B", `"1.5B" is not a whole number of bytes`, false},
		{"1e-3", `not a whole number of bytes`, false},
		{"1152921504606846976", `want a size from 0 to 1 EiB`, false},
		{"1048576TiB", `want a size from 0 to 1 EiB`, false},
		{"1e300", `want a size from 0 to 1 EiB`, false},
		{"99999999999999999999", `want a size from 0 to 1 EiB`, false},
	} {
		_, err := ParseSize(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrSyntax) != c.syntax {
			t.Errorf("ParseSize(%q): error %v; want it to contain %q, syntax %v", c.in, err, c.want, c.syntax)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"100G", 100e9}, {"100g", 100e9}, {"400Gb/s", 400e9}, {"800Gbps", 800e9}, {"800GBPS", 0},
		{"1.6T", 1.6e12}, {"25e9b/s", 25e9}, {"2.5G", 2.5e9}, {"10Gbit", 10e9}, {"10Gbits", 10e9},
		{"10 Gbit/s", 10e9}, {"10Gbits/s", 10e9}, {"100M", 100e6}, {"100m", 100e6}, {"500k", 0},
		{"1000k", 1e6}, {"1000000bps", 1e6}, {"2.3G", 2.3e9}, {"1000T", 1e15},
	} {
		got, err := ParseRate(c.in)
		if c.want == 0 {
			if err == nil {
				t.Errorf("ParseRate(%q) = %d, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	for _, c := range []struct {
		in, want string
		syntax   bool
	}{
		{"100", `"100": a rate needs a unit, like 100G or 400Gb/s`, true},
		{"fast", `"fast" is not a rate (want e.g. 100G, 400Gb/s, 800Gbps)`, true},
		{"", `is not a rate`, true},
		{"G", `is not a rate`, true},
		{"100Gi", `is not a rate`, true},
		{"infG", `is not a rate`, true},
		{"10GB/s", `"10GB/s" is bytes per second: write rates in bits, like 100Gb/s`, false},
		{"10GBps", `bytes per second`, false},
		{"-5G", `want a positive rate up to 1000T`, false},
		{"0G", `want a positive rate`, false},
		{"1001T", `up to 1000T`, false},
		{"500k", `"500k": a rate below 1 Mb/s is surely a mistake`, false},
	} {
		_, err := ParseRate(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrSyntax) != c.syntax {
			t.Errorf("ParseRate(%q): error %v; want it to contain %q, syntax %v", c.in, err, c.want, c.syntax)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0}, {"0s", 0}, {"500ns", 500}, {"40us", 40 * time.Microsecond}, {"40µs", 40 * time.Microsecond},
		{"40μs", 40 * time.Microsecond}, {"1.5ms", 1500 * time.Microsecond}, {"2s", 2 * time.Second},
		{"1m30s", 90 * time.Second}, {"1h", time.Hour}, {" 10 ms ", 10 * time.Millisecond},
	} {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		in, want string
		syntax   bool
	}{
		{"5", `"5": a duration needs a unit (ns, us, ms, s), like 40us`, true},
		{"1.5", `needs a unit`, true},
		{"soon", `"soon" is not a duration (want e.g. 500ns, 40us, 1.5ms, 2s)`, true},
		{"", `is not a duration`, true},
		{"5d", `is not a duration`, true},
		{"-1s", `"-1s": a duration cannot be negative`, false},
	} {
		_, err := ParseDuration(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrSyntax) != c.syntax {
			t.Errorf("ParseDuration(%q): error %v; want it to contain %q, syntax %v", c.in, err, c.want, c.syntax)
		}
	}
}
