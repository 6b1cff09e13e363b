package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// runVersion is `mrc version`.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "", stderr)
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("version takes no arguments (got %s)", strings.Join(fs.Args(), " "))
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(info))
	return nil
}

// versionLine says what a binary was built from, in one line: the
// module's version ("(devel)" for a build in a checkout) and path, the
// VCS revision, its time and whether the tree had local changes, and the
// Go toolchain. info may be nil (a binary built without module support).
func versionLine(info *debug.BuildInfo) string {
	if info == nil {
		return fmt.Sprintf("mrc (unknown version: no build information), %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	version := info.Main.Version
	if version == "" {
		version = "(unknown version)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	line := "mrc " + version
	if info.Main.Path != "" {
		line += " (" + info.Main.Path + ")"
	}
	if rev := settings["vcs.revision"]; rev != "" {
		var about []string
		if t := settings["vcs.time"]; t != "" {
			about = append(about, t)
		}
		if settings["vcs.modified"] == "true" {
			about = append(about, "with local changes")
		}
		line += ", revision " + rev
		if len(about) > 0 {
			line += " (" + strings.Join(about, ", ") + ")"
		}
	} else if version == "(devel)" {
		line += ", no VCS revision (built outside a git checkout, or with -buildvcs=false)"
	}
	goVersion := info.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	return line + ", " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
