package main

// Shared harness for the subcommand tests: TestMain builds the mrc binary
// once, and runMRC runs it the way a user would. Tests of any subcommand
// should go through runMRC rather than calling run() so that flag parsing,
// exit codes and the split between stdout and stderr are tested too.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// mrcBin is the path of the mrc binary built by TestMain.
var mrcBin string

// runTimeout bounds one invocation of the binary, so a hung subcommand fails
// its test instead of the whole test binary's deadline. It guards against
// hangs, not slowness: the default scenario takes 10–20 s on a quiet
// 2-core machine and several times that on a loaded one.
const runTimeout = 5 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mrc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "main_test:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	mrcBin = filepath.Join(dir, "mrc")
	if runtime.GOOS == "windows" {
		mrcBin += ".exe"
	}
	// go test puts $GOROOT/bin first on PATH, so this is the go that is
	// running the tests.
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "main_test: cannot find the go command:", err)
		return 1
	}
	build := exec.Command(gobin, "build", "-o", mrcBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "main_test: building mrc: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// runMRC runs the mrc binary with args, no stdin, and returns what it wrote
// to stdout and stderr and its exit status. It fails the test only if the
// binary could not be run at all or did not finish within runTimeout; a
// non-zero exit status is returned, not treated as an error.
func runMRC(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runMRCStdin(t, "", args...)
}

// runMRCStdin is runMRC with stdin as the binary's standard input.
func runMRCStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mrcBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		t.Fatalf("mrc %s: did not finish within %v\nstderr: %s", strings.Join(args, " "), runTimeout, errb.String())
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("mrc %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// assertUsageError checks the contract every bad invocation of every
// subcommand must keep: exit status 2, nothing on stdout, exactly one line
// on stderr, and no Go panic or stack trace. It returns that line.
func assertUsageError(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := runMRC(t, args...)
	if code != 2 {
		t.Errorf("mrc %s: exit %d, want 2 (stderr %q)", strings.Join(args, " "), code, stderr)
	}
	if stdout != "" {
		t.Errorf("mrc %s: wrote to stdout on error: %q", strings.Join(args, " "), stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("mrc %s: stderr is not one line: %q", strings.Join(args, " "), stderr)
	}
	for _, bad := range []string{"panic", "goroutine", ".go:"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("mrc %s: stderr looks like a crash (%q): %q", strings.Join(args, " "), bad, stderr)
		}
	}
	return strings.TrimSuffix(stderr, "\n")
}

func TestHelpAndUnknownCommand(t *testing.T) {
	stdout, _, code := runMRC(t, "help")
	if code != 0 || !strings.Contains(stdout, "Commands:") {
		t.Errorf("mrc help: exit %d, stdout %q", code, stdout)
	}
	if _, _, code := runMRC(t); code != 2 {
		t.Errorf("mrc with no command: exit %d, want 2", code)
	}
	if line := assertUsageError(t, "no-such-command"); !strings.Contains(line, "unknown command") {
		t.Errorf("unknown command: %q", line)
	}
}

// TestFlagErrorsInOurWords: a flag value that does not parse gets a
// message naming the flag, the value and what it wants, for every
// subcommand and every kind of flag, never Go's generic "parse error".
func TestFlagErrorsInOurWords(t *testing.T) {
	duration, whole, natural := "want a duration such as 10ms", "want a whole number such as 4", "want a whole number, 0 or more, such as 7"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--stop", "10"}, `invalid value "10" for --stop: ` + duration},
		{[]string{"sim", "--stop"}, "--stop needs a value: a duration such as 10ms"},
		{[]string{"sim", "--workers", "x"}, `invalid value "x" for --workers: ` + whole},
		{[]string{"sim", "--workers", "99999999999999999999"}, `for --workers: out of range; ` + whole},
		{[]string{"sim", "--seed", "-1"}, `invalid value "-1" for --seed: ` + natural},
		{[]string{"sim", "--quiet=maybe"}, `invalid value "maybe" for --quiet: want true or false`},
		{[]string{"sim", "--bogus"}, "flag provided but not defined: --bogus (mrc sim -h lists the flags)"},
		{[]string{"plan", "--gpus", "lots"}, `invalid value "lots" for --gpus: ` + whole},
		{[]string{"perf", "client", "--duration", "5"}, `invalid value "5" for --duration: ` + duration},
		{[]string{"perf", "client", "--retries", "x"}, `invalid value "x" for --retries: ` + whole},
		{[]string{"perf", "client", "--drop", "lots"}, `invalid value "lots" for --drop: want a number such as 0.5`},
		{[]string{"perf", "client", "--bytes", "12X"}, `invalid value "12X" for --bytes: bad size "12X"; want a size such as 64MiB`},
		{[]string{"perf", "server", "--pcap-snaplen", "x"}, `invalid value "x" for --pcap-snaplen: ` + whole},
		{[]string{"dump", "--json=maybe"}, `invalid value "maybe" for --json: want true or false`},
		{[]string{"switch", "--check=maybe"}, `invalid value "maybe" for --check: want true or false`},
	} {
		line := assertUsageError(t, c.args...)
		if !strings.Contains(line, c.want) || strings.Contains(line, "parse error") || strings.Contains(line, "flag -") {
			t.Errorf("mrc %s:\n got %q\nwant it to contain %q", strings.Join(c.args, " "), line, c.want)
		}
	}
}

// TestCommandTable: the explicit command table names each subcommand once,
// in alphabetical order, and help lists exactly those, in that order.
func TestCommandTable(t *testing.T) {
	stdout, _, code := runMRC(t, "help")
	if code != 0 {
		t.Fatalf("mrc help: exit %d", code)
	}
	_, list, _ := strings.Cut(stdout, "Commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	var listed []string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			listed = append(listed, f[0])
		}
	}
	var names []string
	for i, c := range commands {
		if i > 0 && commands[i-1].name >= c.name {
			t.Errorf("command table: %q after %q, want alphabetical and unique", c.name, commands[i-1].name)
		}
		if c.run == nil || c.summary == "" {
			t.Errorf("command %q has no run function or no summary", c.name)
		}
		names = append(names, c.name)
	}
	if strings.Join(listed, " ") != strings.Join(names, " ") {
		t.Errorf("help lists %v, the table has %v", listed, names)
	}
}
