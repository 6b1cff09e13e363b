package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/openmrc/mrc/units"
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
		fs.printDefaults()
		return errHelp
	}
	if err != nil {
		return usageError{fs.explain(err)}
	}
	return nil
}

// parseInterleaved parses args whose flags may come before, between or
// after the positional arguments, and returns the positional ones.
func (fs *flagSet) parseInterleaved(args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// given returns the names of the flags set on the command line.
func (fs *flagSet) given() map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// printDefaults lists the flags as flag.PrintDefaults does, naming a
// size or duration flag's argument "size" or "duration" where the flag
// package, which does not know these types, would say "value".
func (fs *flagSet) printDefaults() {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		if arg == "value" {
			switch f.Value.(type) {
			case sizeFlag:
				arg = "size"
			case durationFlag:
				arg = "duration"
			}
		}
		line := "  -" + f.Name
		if arg != "" {
			line += " " + arg
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if d := f.DefValue; d != "" && d != "0" && d != "0s" && d != "false" {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, ok := g.Get().(string); ok {
					d = strconv.Quote(d)
				}
			}
			line += " (default " + d + ")"
		}
		fmt.Fprintln(fs.stderr, line)
	})
}

// The flag package's messages, which explain rewrites.
var (
	flagBadValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)
	flagNoValue   = regexp.MustCompile(`^flag needs an argument: -(.*)$`)
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -(.*)$`)
)

// explain puts a parse error of the flag package in our words: which
// flag, the value given and what it wants ("invalid value "10" for
// --stop: want a duration such as 10ms").
func (fs *flagSet) explain(err error) string {
	msg := err.Error()
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		value, name, reason := m[1], m[2], m[3]
		want := fs.want(name)
		if why, ok := strings.CutPrefix(reason, strconv.Quote(value)); ok { // package units says what it wants
			why = strings.TrimPrefix(strings.TrimPrefix(why, ":"), " is")
			return fmt.Sprintf("--%s %s:%s", name, value, why)
		}
		switch {
		case want == "":
			return fmt.Sprintf("invalid value %q for --%s: %s", value, name, reason)
		case reason == "parse error":
			return fmt.Sprintf("invalid value %q for --%s: want %s", value, name, want)
		case reason == "value out of range":
			reason = "out of range"
		}
		return fmt.Sprintf("invalid value %q for --%s: %s; want %s", value, name, reason, want)
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		if want := fs.want(m[1]); want != "" {
			return fmt.Sprintf("--%s needs a value: %s", m[1], want)
		}
		return fmt.Sprintf("--%s needs a value", m[1])
	}
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("flag provided but not defined: --%s (%s -h lists the flags)", m[1], fs.Name())
	}
	return msg
}

// want says what flag name takes, by its type: "a duration such as
// 10ms"; "" if unknown.
func (fs *flagSet) want(name string) string {
	f := fs.Lookup(name)
	if f == nil {
		return ""
	}
	if _, ok := f.Value.(sizeFlag); ok {
		return "a size such as 64MiB or 500MB (KiB, MiB, GiB, TiB: powers of 1024; kB, MB, GB, TB: powers of 1000)"
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 10ms (ns, us, ms, s, m, h; not negative)"
	case bool:
		return "true or false"
	case int, int64:
		return "a whole number such as 4"
	case uint, uint64:
		return "a whole number, 0 or more, such as 7"
	case float64:
		return "a number such as 0.5"
	}
	return ""
}

// sizeFlag is a flag.Value for byte counts, in the grammar of package
// units: 64MiB, 500MB, 4096.
type sizeFlag struct{ v *int64 }

func (f sizeFlag) String() string {
	if f.v == nil {
		return "0"
	}
	return strconv.FormatInt(*f.v, 10)
}

// Set parses s. Input that is no size at all is a "bad size", which
// explain follows with what a size looks like; an ambiguous or
// out-of-range one says why.
func (f sizeFlag) Set(s string) error {
	v, err := units.ParseSize(s)
	if errors.Is(err, units.ErrSyntax) {
		return fmt.Errorf("bad size %q", s)
	}
	if err != nil {
		return err
	}
	*f.v = int64(v) // units.MaxSize fits
	return nil
}

// durationFlag is a flag.Value for durations, in the grammar of package
// units: 40us, 1.5ms, 2s; never negative.
type durationFlag struct{ v *time.Duration }

func (f durationFlag) String() string {
	if f.v == nil {
		return "0s"
	}
	return f.v.String()
}

// Get returns the duration, so that want describes the flag.
func (f durationFlag) Get() any { return *f.v }

// Set parses s. Input that is no duration at all is a parse error, which
// explain turns into what a duration looks like; a negative one says so.
func (f durationFlag) Set(s string) error {
	v, err := units.ParseDuration(s)
	if errors.Is(err, units.ErrSyntax) {
		return errors.New("parse error")
	}
	if err != nil {
		return err
	}
	*f.v = v
	return nil
}

// DurationVar defines a duration flag read by units.ParseDuration; it
// hides flag.FlagSet's, so every subcommand's durations share one grammar
// with scenarios and switch tables.
func (fs *flagSet) DurationVar(p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{p}, name, usage)
}

// Duration is DurationVar returning the variable.
func (fs *flagSet) Duration(name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	fs.DurationVar(p, name, value, usage)
	return p
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
