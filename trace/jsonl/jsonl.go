// Package jsonl writes and reads traces as JSON lines, one object per
// trace.Record, in the schema of docs/trace.md. It is a host's tool: the
// core emits trace.Records and never imports this package.
package jsonl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/wire"
)

// Writer writes records as JSON lines, one object per record, in the
// schema of docs/trace.md:
//
//	{"t":1500,"kind":"sent","qpn":256,"psn":100,"ev":"0xc000001d","plane":0,"bytes":4096}
//	{"t":2674,"kind":"nacked","host":"A","qpn":256,"psn":103,"ev":"0xc00a1014","plane":1,"bytes":4096,"reason":"TRIMMED"}
//	{"t":40674,"kind":"ev_state","qpn":256,"ev":"0xc008102f","plane":1,"from":"GOOD","to":"ASSUMED_BAD","reason":"loss"}
//	{"t":2696,"kind":"cwnd","qpn":256,"cwnd":61440,"inflight":57344}
//	{"t":0,"kind":"qp_state","qpn":256,"from":"RTR","to":"RTS"}
//
// Each kind has a fixed set of keys, present even when zero, so a consumer
// can rely on them. It is a trace.Tracer; Host returns Tracers that tag each
// record with a host name, so the endpoints of a simulation can share one
// file. Writing does not allocate; it is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	err error
	n   uint64
}

// NewWriter returns a Writer that writes to w. Call Flush when
// done.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<16), buf: make([]byte, 0, 256)}
}

// Trace writes r without a host.
func (j *Writer) Trace(r *trace.Record) { j.write(r, "") }

// Host returns a Tracer that writes records tagged "host": name.
func (j *Writer) Host(name string) trace.Tracer { return hostTracer{j, name} }

type hostTracer struct {
	j    *Writer
	host string
}

func (h hostTracer) Trace(r *trace.Record) { h.j.write(r, h.host) }

// Records returns how many records have been written.
func (j *Writer) Records() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.n
}

// Flush writes buffered records to the underlying writer and returns the
// first error met since the Writer was made.
func (j *Writer) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = j.w.Flush()
	}
	return j.err
}

// Err returns the first write error, if any. Tracers cannot return
// errors, so a Writer keeps the first one and drops later records.
func (j *Writer) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

func (j *Writer) write(r *trace.Record, host string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	b := Append(j.buf[:0], r, host)
	b = append(b, '\n')
	j.buf = b
	if _, err := j.w.Write(b); err != nil {
		j.err = err
		return
	}
	j.n++
}

// Append appends the JSON object for r (tagged with host, unless
// empty) to b, without a newline. It does not allocate when b has room.
func Append(b []byte, r *trace.Record, host string) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, int64(r.Time), 10)
	b = append(b, `,"kind":`...)
	b = appendString(b, r.Kind.String())
	if host != "" {
		b = append(b, `,"host":`...)
		b = appendString(b, host)
	}
	b = append(b, `,"qpn":`...)
	b = strconv.AppendUint(b, uint64(r.QPN), 10)
	k := r.Kind.Fields()
	if k&trace.FieldsPacket != 0 {
		b = append(b, `,"psn":`...)
		b = strconv.AppendUint(b, uint64(r.PSN), 10)
	}
	if k&(trace.FieldsPacket|trace.FieldsEV) != 0 {
		b = appendEV(append(b, `,"ev":`...), r.EV)
		b = append(b, `,"plane":`...)
		b = strconv.AppendInt(b, int64(r.Plane), 10)
	}
	if k&trace.FieldsPacket != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, int64(r.Bytes), 10)
	}
	if k&trace.FieldsCwnd != 0 {
		b = append(b, `,"cwnd":`...)
		b = strconv.AppendInt(b, int64(r.Cwnd), 10)
		b = append(b, `,"inflight":`...)
		b = strconv.AppendInt(b, int64(r.Inflight), 10)
	}
	if k&trace.FieldsStates != 0 {
		b = appendString(append(b, `,"from":`...), r.From)
		b = appendString(append(b, `,"to":`...), r.To)
	}
	if k&trace.FieldsReason != 0 {
		b = appendString(append(b, `,"reason":`...), r.Reason)
	}
	return append(b, '}')
}

func appendEV(b []byte, ev wire.EV) []byte {
	const hex = "0123456789abcdef"
	b = append(b, `"0x`...)
	for s := 28; s >= 0; s -= 4 {
		b = append(b, hex[ev>>uint(s)&0xF])
	}
	return append(b, '"')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// Line is one line of a JSON-lines trace as read back: the record
// and the host it was tagged with.
type Line struct {
	trace.Record
	Host string
}

// jsonLine mirrors the schema for decoding.
type jsonLine struct {
	T        *int64  `json:"t"`
	Kind     *string `json:"kind"`
	Host     string  `json:"host"`
	QPN      uint32  `json:"qpn"`
	PSN      uint32  `json:"psn"`
	EV       string  `json:"ev"`
	Plane    int     `json:"plane"`
	Bytes    int     `json:"bytes"`
	Cwnd     int     `json:"cwnd"`
	Inflight int     `json:"inflight"`
	From     string  `json:"from"`
	To       string  `json:"to"`
	Reason   string  `json:"reason"`
}

// Reader reads a JSON-lines trace.
type Reader struct {
	sc   *bufio.Scanner
	line int
}

// NewReader returns a reader of the JSON-lines trace in r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	return &Reader{sc: sc}
}

// Next returns the next record, or io.EOF after the last one. Blank lines
// are skipped; a line that does not fit the schema is an error naming it.
func (jr *Reader) Next() (Line, error) {
	for jr.sc.Scan() {
		jr.line++
		text := jr.sc.Bytes()
		if len(text) == 0 {
			continue
		}
		var l jsonLine
		if err := json.Unmarshal(text, &l); err != nil {
			return Line{}, fmt.Errorf("trace: line %d: %v", jr.line, err)
		}
		if l.T == nil || l.Kind == nil {
			return Line{}, fmt.Errorf("trace: line %d: missing \"t\" or \"kind\"", jr.line)
		}
		k, ok := trace.ParseKind(*l.Kind)
		if !ok {
			return Line{}, fmt.Errorf("trace: line %d: unknown kind %q", jr.line, *l.Kind)
		}
		var ev uint64
		if l.EV != "" {
			var err error
			if ev, err = strconv.ParseUint(l.EV, 0, 32); err != nil {
				return Line{}, fmt.Errorf("trace: line %d: ev %q: not a 32-bit number", jr.line, l.EV)
			}
		}
		return Line{Host: l.Host, Record: trace.Record{
			Time: mtime.Time(*l.T), Kind: k, QPN: l.QPN, PSN: l.PSN, EV: wire.EV(ev), Plane: l.Plane,
			Bytes: l.Bytes, Cwnd: l.Cwnd, Inflight: l.Inflight, From: l.From, To: l.To, Reason: l.Reason,
		}}, nil
	}
	if err := jr.sc.Err(); err != nil {
		return Line{}, fmt.Errorf("trace: line %d: %v", jr.line+1, err)
	}
	return Line{}, io.EOF
}
