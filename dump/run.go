package dump

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/openmrc/mrc/pcap"
)

// Config configures Run.
type Config struct {
	Options
	JSON  bool // one JSON object per packet and line, instead of text
	Brief bool // text: one line per packet
}

// Result counts what Run saw.
type Result struct {
	Packets      int // packets read
	MRC          int // of which MRC packets
	WithProblems int // packets with at least one problem
	Skipped      int // damaged capture blocks skipped
}

// CaptureError is the JSON line Run writes for damage in the capture
// file itself (rather than in a packet).
type CaptureError struct {
	Error   string `json:"capture_error"`
	Offset  int64  `json:"offset"`
	Skipped bool   `json:"skipped"` // the damaged block was skipped and reading went on
}

// Run decodes every packet of the capture in and writes it to out. It
// returns pcap.ErrNotCapture if in is not a capture. Damage in the
// capture is written to out where it occurs; a damaged block is skipped
// when its framing allows, otherwise Run stops there and returns the
// error after writing everything before it.
func Run(in io.Reader, out io.Writer, c Config) (Result, error) {
	var res Result
	r, err := pcap.NewReader(in)
	if err != nil {
		return res, err
	}
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	report := func(e *pcap.Error) error {
		if c.JSON {
			return enc.Encode(CaptureError{Error: e.Error(), Offset: e.Offset, Skipped: e.Skipped})
		}
		what := "capture damaged, reading stops"
		if e.Skipped {
			what = "capture damaged, block skipped"
		}
		_, err := fmt.Fprintf(bw, "! %s: %v\n", what, e)
		return err
	}
	for {
		p, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *pcap.Error
			if errors.As(err, &pe) {
				if werr := report(pe); werr != nil {
					return res, werr
				}
				if pe.Skipped {
					res.Skipped++
					continue
				}
			}
			if ferr := bw.Flush(); ferr != nil {
				return res, ferr
			}
			return res, err
		}
		res.Packets++
		f := Decode(p.LinkType, p.Data, p.OrigLen, &c.Options)
		f.Number, f.TimeNS, f.Interface = res.Packets, p.Time, p.Interface
		if ifc, ok := r.Interface(p.Interface); ok {
			f.IfName = ifc.Name
		}
		if p.Dir != pcap.DirUnknown {
			f.Dir = p.Dir.String()
		}
		if f.MRC {
			res.MRC++
		}
		if len(f.Problems) > 0 {
			res.WithProblems++
		}
		if c.JSON {
			err = enc.Encode(f)
		} else {
			err = WriteText(bw, f, c.Brief)
		}
		if err != nil {
			return res, err
		}
	}
	return res, bw.Flush()
}
