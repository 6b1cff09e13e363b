package main

import (
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/scenario"
	"github.com/openmrc/mrc/swnet"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/units"
	"go.yaml.in/yaml/v3"
)

// Every place a user types a unit: a flag, a scenario file, a switch
// table, a trace filter. Each returns the value the string means there,
// or the error it gets.
func sizeEverywhere(s string) map[string]result {
	var flagBytes int64
	ferr := sizeFlag{&flagBytes}.Set(s)
	var z scenario.Size
	serr := yaml.Unmarshal([]byte("'"+s+"'"), &z)
	tb, terr := swnet.ParseTable(strings.NewReader("switch mode ecmp\nport a\nqueue buffer "+s+"\n"), "t")
	var buffer int
	if terr == nil {
		buffer = tb.Switch.Queue.Buffer
	}
	return map[string]result{
		"flag":     {int64(flagBytes), ferr},
		"scenario": {int64(z), serr},
		"switch":   {int64(buffer), terr},
	}
}

func rateEverywhere(s string) map[string]result {
	var r scenario.Rate
	serr := yaml.Unmarshal([]byte("'"+s+"'"), &r)
	tb, terr := swnet.ParseTable(strings.NewReader("switch mode ecmp\nport a rate "+s+"\n"), "t")
	var rate int64
	if terr == nil {
		rate = tb.Ports[0].Rate
	}
	return map[string]result{"scenario": {int64(r), serr}, "switch": {rate, terr}}
}

func durationEverywhere(s string) map[string]result {
	var d time.Duration
	ferr := durationFlag{&d}.Set(s)
	var sd scenario.Duration
	serr := yaml.Unmarshal([]byte("'"+s+"'"), &sd)
	tb, terr := swnet.ParseTable(strings.NewReader("switch mode ecmp\nport a delay "+s+"\n"), "t")
	var delay time.Duration
	if terr == nil {
		delay = tb.Ports[0].Delay
	}
	flt, ferr2 := trace.ParseFilter("t=" + s + "..")
	return map[string]result{
		"flag":         {int64(d), ferr},
		"scenario":     {int64(sd), serr},
		"switch":       {int64(delay), terr},
		"trace filter": {int64(flt.From), ferr2},
	}
}

type result struct {
	v   int64
	err error
}

// TestUnitsMeanTheSameEverywhere: a size, rate or duration typed on the
// command line, in a scenario, in a switch table or in a trace filter
// means what package units says, and what it refuses is refused
// everywhere: "2M" in every host, with both spellings suggested.
func TestUnitsMeanTheSameEverywhere(t *testing.T) {
	// Hosts that pass the grammar's message on (after file:line and the
	// key) must show it; the flags and the trace filter say it their way.
	check := func(kind, s string, got map[string]result, want int64, wantErr error) {
		for host, r := range got {
			switch {
			case wantErr != nil && r.err == nil:
				t.Errorf("%s %q in the %s: %d, want an error like %q", kind, s, host, r.v, wantErr)
			case wantErr != nil && (host == "scenario" || host == "switch") && !strings.Contains(r.err.Error(), firstClause(wantErr)):
				t.Errorf("%s %q in the %s: error %q, want it to say %q", kind, s, host, r.err, firstClause(wantErr))
			case wantErr == nil && (r.err != nil || r.v != want):
				t.Errorf("%s %q in the %s: %d, %v; want %d", kind, s, host, r.v, r.err, want)
			}
		}
	}
	for _, s := range []string{"4096", "2MB", "2MiB", "256KiB", "64kB", "1.5MiB", "1e6", "2M", "2K", "2G", "12X", "1.5B", "-1"} {
		want, err := units.ParseSize(s)
		check("size", s, sizeEverywhere(s), int64(want), err)
	}
	for _, s := range []string{"100G", "2.5Gbit", "400Gb/s", "800Gbps", "10M", "25e9b/s", "100", "10GB/s", "fast", "0G"} {
		want, err := units.ParseRate(s)
		check("rate", s, rateEverywhere(s), want, err)
	}
	for _, s := range []string{"0", "500ns", "40us", "40µs", "1.5ms", "2s", "5", "-1s", "soon"} {
		want, err := units.ParseDuration(s)
		check("duration", s, durationEverywhere(s), int64(want), err)
	}
	// The one meaning that changed: --bytes 2MB is 2,000,000 bytes.
	if got := sizeEverywhere("2MB")["flag"]; got.v != 2_000_000 {
		t.Errorf("--bytes 2MB = %d, want 2,000,000", got.v)
	}
	for host, r := range sizeEverywhere("2M") {
		if r.err == nil || host != "flag" && !strings.Contains(r.err.Error(), `"2M": say 2MiB (2,097,152 bytes) or 2MB (2,000,000 bytes)`) {
			t.Errorf("2M in the %s: %v", host, r.err)
		}
	}
}

// firstClause is an error's text up to its first semicolon.
func firstClause(err error) string {
	s, _, _ := strings.Cut(err.Error(), ";")
	return s
}

// TestFlagUnitErrors: a flag value the grammar refuses says why, naming
// the flag and the value.
func TestFlagUnitErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"perf", "client", "--bytes", "2M"}, `--bytes 2M: say 2MiB (2,097,152 bytes) or 2MB (2,000,000 bytes); a bare M is ambiguous`},
		{[]string{"perf", "client", "--chunk", "1.5B"}, `--chunk 1.5B: not a whole number of bytes`},
		{[]string{"perf", "client", "--base-rtt", "-1ms"}, `--base-rtt -1ms: a duration cannot be negative`},
		{[]string{"perf", "client", "--addr", "[::1]:5201", "--duration", "1 s", "--bytes", "1MiB"}, `exclusive`},
	} {
		line := assertUsageError(t, c.args...)
		if !strings.Contains(line, c.want) {
			t.Errorf("mrc %s:\n got %q\nwant it to contain %q", strings.Join(c.args, " "), line, c.want)
		}
	}
}

// TestPerfBytesDecimal: --bytes 2MB transfers 2,000,000 bytes, and
// --chunk takes the same grammar.
func TestPerfBytesDecimal(t *testing.T) {
	addr, _, wait := startPerfServer(t)
	r := perfClientJSON(t, addr, "--bytes", "2MB", "--chunk", "500kB")
	if !r.Verified || r.Bytes != 2_000_000 {
		t.Errorf("result %+v, want 2,000,000 bytes verified", r)
	}
	if _, code := wait(); code != 0 {
		t.Errorf("server exit %d", code)
	}
}

// TestHelpNamesUnitArguments: -h names a size or duration flag's
// argument by its kind, as the flag package does for its own types.
func TestHelpNamesUnitArguments(t *testing.T) {
	_, stderr, code := runMRC(t, "perf", "client", "-h")
	for _, want := range []string{"\n  -base-rtt duration\n", "(default 100µs)", "\n  -bytes size\n", "\n  -chunk size\n", "(default 1048576)", "\n  -addr string\n"} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("mrc perf client -h: exit %d, no %q in\n%s", code, want, stderr)
		}
	}
}
