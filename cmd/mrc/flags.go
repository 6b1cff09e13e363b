package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// errHelp is returned when the user asked for a command's help; it exits 0.
var errHelp = flag.ErrHelp

// flagSet is a subcommand's flags. Parse errors come back as one-line
// usageErrors; -h prints the full usage to stderr.
type flagSet struct {
	*flag.FlagSet
	usage  string
	stderr io.Writer
}

// newFlagSet returns the flags of subcommand name; usage is the argument
// synopsis shown after "mrc name".
func newFlagSet(name, usage string, stderr io.Writer) *flagSet {
	fs := flag.NewFlagSet("mrc "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, usage: usage, stderr: stderr}
}

// parse parses args. It returns errHelp after printing the usage for -h,
// and a usageError for anything the flag package rejects.
func (fs *flagSet) parse(args []string) error {
	err := fs.FlagSet.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(fs.stderr, "Usage: %s %s\n\nFlags:\n", fs.Name(), fs.usage)
		fs.SetOutput(fs.stderr)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// openJSON opens the destination of a --json flag: nothing for "", out for
// "-", else the named file, created now so that a bad path fails before
// any work. close closes the file, if any.
func openJSON(name string, out io.Writer) (w io.Writer, close func(), err error) {
	switch name {
	case "":
		return nil, func() {}, nil
	case "-":
		return out, func() {}, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, usagef("--json: %v", err)
	}
	return f, func() { f.Close() }, nil
}
