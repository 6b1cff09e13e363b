// Command mrc is the MRC toolbox: a fabric simulator that runs the real MRC
// core (sim), a fabric planner (plan), and the tools that run MRC over real
// sockets. Each subcommand lives in its own file; this file holds the table
// of them and dispatches.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// A command is one `mrc` subcommand. run gets the arguments after the
// subcommand name and returns an error; a usageError exits with status 2,
// any other error with status 1.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands is the table of subcommands, in the order help lists them.
// Each one's run function lives in the file of its name.
var commands = []command{
	{name: "dump", summary: "decode the MRC packets of a pcap or pcapng capture", run: runDump},
	{name: "fabric", summary: "build an emulated MRC fabric in network namespaces and leave it up (root), or remove fabrics", run: runFabric},
	{name: "perf", summary: "measure MRC over UDP sockets: an iperf-style server and client", run: runPerf},
	{name: "plan", summary: "size a multi-plane two-tier fabric against a single-plane three-tier one", run: runPlan},
	{name: "sim", summary: "simulate MRC and baselines on multi-plane fabrics (built-in scenarios, YAML files, htsim inputs)", run: runSim},
	{name: "sweep", summary: "run a scenario over a grid of parameters and seeds, locally or as a Slurm job array, and collect the results", run: runSweep},
	{name: "switch", summary: "a software MRC switch on network interfaces: SRv6 uN, ECMP, ECN, trimming", run: runSwitch},
	{name: "version", summary: "print the version and VCS revision mrc was built from (also mrc --version)", run: runVersion},
}

// lookupCommand returns the subcommand called name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageError is a problem with how the command was invoked: a bad flag, a
// bad value or an unreadable input. It exits with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// exitError ends the command with status code, after printing msg (if
// any) as the one line on stderr; an interrupted run exits 130 (128 +
// SIGINT), as shells expect.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one mrc invocation and returns the process exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if _, ok := lookupCommand(args[1]); ok {
				return run([]string{args[1], "-h"}, stdout, stderr)
			}
		}
		printHelp(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	cmd, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "mrc: unknown command %q (run 'mrc help')\n", args[0])
		return 2
	}
	err := cmd.run(args[1:], stdout, stderr)
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "mrc %s: %s\n", args[0], ee.msg)
		}
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mrc %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "mrc %s: %v\n", args[0], err)
		return 1
	}
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "mrc: an open implementation of MRC (Multipath Reliable Connection)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: mrc <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'mrc <command> -h' for the flags of one command, 'mrc --version' for the version.")
}
