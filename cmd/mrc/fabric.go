package main

// mrc fabric: an emulated MRC fabric in network namespaces (package
// fabric), built and left up for experiments by hand. Needs root.

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/openmrc/mrc/fabric"
)

const fabricUsage = `up [--planes P] [--hosts H] [--t1s N] [--encap srv6|usid] [--mrc t1-p1-0 [--mrc-bin PATH]] [--dir DIR]
       mrc fabric down ID    (one fabric, by the ID up printed)
       mrc fabric sweep      (every fabric built by hand, and the tests' leftovers)`

// runFabric dispatches to up, down or sweep.
func runFabric(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want 'up', 'down ID' or 'sweep' (mrc fabric -h)")
	}
	switch args[0] {
	case "up":
		return runFabricUp(args[1:], stdout, stderr)
	case "down":
		if len(args) != 2 || strings.HasPrefix(args[1], "-") {
			return usagef("want 'mrc fabric down ID', the ID 'mrc fabric up' printed")
		}
		n, err := fabric.Remove(args[1])
		fmt.Fprintf(stdout, "deleted %d namespaces of %s\n", n, args[1])
		return err
	case "sweep":
		gone, err := fabric.Sweep(fabric.DefaultPrefix)
		if err == nil {
			var more []string
			more, err = fabric.Sweep(fabric.ManualPrefix)
			gone = append(gone, more...)
		}
		for _, g := range gone {
			fmt.Fprintln(stdout, "deleted", g)
		}
		return err
	case "-h", "-help", "--help":
		fmt.Fprintf(stderr, "Usage: mrc fabric %s\n\nRun 'mrc fabric up -h' for its flags; docs/fabric.md walks through a session.\n", fabricUsage)
		return errHelp
	}
	return usagef("unknown fabric mode %q: want 'up', 'down' or 'sweep'", args[0])
}

// runFabricUp builds a fabric, leaves it up (the `mrc switch` processes
// run on, detached) and prints how to use it.
func runFabricUp(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("fabric up", "[flags]", stderr)
	var cfg fabric.Config
	fs.IntVar(&cfg.Planes, "planes", 2, "planes")
	fs.IntVar(&cfg.Hosts, "hosts", 2, "hosts")
	fs.IntVar(&cfg.T1s, "t1s", 2, "T1 switches per plane")
	fs.StringVar(&cfg.Encap, "encap", "srv6", "srv6 or usid")
	fs.Var((*switchList)(&cfg.MRC), "mrc", "a switch to run as `mrc switch` (repeatable, or comma-separated), e.g. t1-p1-0")
	fs.StringVar(&cfg.MRCBinary, "mrc-bin", "", "the mrc binary the switches run (default: this one)")
	fs.StringVar(&cfg.MRCPort, "mrc-port", "", `port options of the mrc switches, e.g. "rate 1G delay 50us"`)
	fs.StringVar(&cfg.MRCQueue, "mrc-queue", "", `queue options of the mrc switches, e.g. "buffer 512K trim-at 64K ecn 16K 48K"`)
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the fabric's files (default: a new temporary one)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if len(cfg.MRC) > 0 && cfg.MRCBinary == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--mrc: finding this binary for the switches: %v (give --mrc-bin)", err)
		}
		cfg.MRCBinary = self
	}
	// Its own prefix: the tests' sweeper removes fabrics whose creator
	// has exited, and this one exits at once.
	cfg.Prefix = fabric.ManualPrefix
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return usagef("--dir: %v", err)
		}
	} else {
		d, err := os.MkdirTemp("", "mrcfab-")
		if err != nil {
			return err
		}
		cfg.Dir = d
	}
	if err := fabric.Available(); err != nil {
		return err
	}
	f, err := fabric.Build(cfg)
	if err != nil {
		return err
	}
	return f.WriteGuide(stdout, "mrc fabric down")
}

// switchList is --mrc: switch names, from repeated flags or one
// comma-separated list.
type switchList []string

func (l *switchList) String() string { return strings.Join(*l, ",") }

func (l *switchList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
