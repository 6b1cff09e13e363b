package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: mrc version and mrc --version print the same one line,
// naming the module and the toolchain; extra arguments are a usage
// error.
func TestVersion(t *testing.T) {
	a, stderr, code := runMRC(t, "version")
	if code != 0 || stderr != "" {
		t.Fatalf("mrc version: exit %d, stderr %q", code, stderr)
	}
	b, _, code := runMRC(t, "--version")
	if code != 0 || a != b {
		t.Errorf("mrc --version: exit %d, %q; mrc version: %q", code, b, a)
	}
	if !strings.HasPrefix(a, "mrc ") || strings.Count(a, "\n") != 1 || !strings.Contains(a, "(github.com/openmrc/mrc)") || !strings.Contains(a, runtime.Version()) {
		t.Errorf("mrc version: %q", a)
	}
	if line := assertUsageError(t, "version", "extra"); !strings.Contains(line, "no arguments") {
		t.Errorf("mrc version extra: %q", line)
	}
	if out, _, _ := runMRC(t, "help"); !strings.Contains(out, "version") {
		t.Errorf("mrc help does not list version:\n%s", out)
	}
}

// TestVersionLine: the line carries the module version and the VCS
// revision, time and state that debug.ReadBuildInfo reports.
func TestVersionLine(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/openmrc/mrc", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "96b3249abc"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "mrc v0.4.0 (github.com/openmrc/mrc), revision 96b3249abc (2026-12-01T10:00:00Z, with local changes), go1.26.0 " + runtime.GOOS + "/" + runtime.GOARCH
	if got := versionLine(info); got != want {
		t.Errorf("versionLine:\n got %q\nwant %q", got, want)
	}
	info.Settings = nil
	info.Main.Version = "(devel)"
	if got := versionLine(info); !strings.HasPrefix(got, "mrc (devel) (github.com/openmrc/mrc), no VCS revision") {
		t.Errorf("versionLine without VCS: %q", got)
	}
	if got := versionLine(nil); !strings.HasPrefix(got, "mrc (unknown version") {
		t.Errorf("versionLine(nil): %q", got)
	}
}
