package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/openmrc/mrc/dump"
	"github.com/openmrc/mrc/pcap"
)

// runDump is `mrc dump FILE`: the decoding lives in package dump.
func runDump(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dump", "[flags] FILE.pcap|FILE.pcapng|-", stderr)
	asJSON := fs.Bool("json", false, "one JSON object per packet and line (schema: docs/dump.md)")
	brief := fs.Bool("brief", false, "one line per packet instead of every header field")
	ports := fs.String("port", "4791", "UDP destination ports to decode as MRC, comma-separated")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one capture file (or - for standard input), got %d arguments", fs.NArg())
	}
	var cfg dump.Config
	cfg.JSON, cfg.Brief = *asJSON, *brief
	for _, s := range strings.Split(*ports, ",") {
		p, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
		if err != nil || p == 0 {
			return usagef("--port %q: want UDP port numbers 1..65535, comma-separated", *ports)
		}
		cfg.Ports = append(cfg.Ports, uint16(p))
	}
	name := fs.Arg(0)
	var in io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return usagef("%v", err)
		}
		defer f.Close()
		in = f
	}
	res, err := dump.Run(in, stdout, cfg)
	switch {
	case errors.Is(err, pcap.ErrNotCapture):
		return usagef("%s: not a pcap or pcapng capture", name)
	case err != nil:
		return fmt.Errorf("%s: %v", name, err)
	case res.Packets == 0:
		return fmt.Errorf("%s: no packets (the capture is empty)", name)
	}
	return nil
}
