package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/openmrc/mrc/mtime"
)

// JSONWriter writes records as JSON lines, one object per record, in the
// schema of docs/trace.md:
//
//	{"t":1500,"kind":"sent","qpn":256,"psn":100,"ev":"0xc000001d","plane":0,"bytes":4096}
//	{"t":2674,"kind":"nacked","host":"A","qpn":256,"psn":103,"ev":"0xc00a1014","plane":1,"bytes":4096,"reason":"TRIMMED"}
//	{"t":40674,"kind":"ev_state","qpn":256,"ev":"0xc008102f","plane":1,"from":"GOOD","to":"ASSUMED_BAD","reason":"loss"}
//	{"t":2696,"kind":"cwnd","qpn":256,"cwnd":61440,"inflight":57344}
//	{"t":0,"kind":"qp_state","qpn":256,"from":"RTR","to":"RTS"}
//
// Each kind has a fixed set of keys, present even when zero, so a consumer
// can rely on them. It is a Tracer; Host returns Tracers that tag each
// record with a host name, so the endpoints of a simulation can share one
// file. Writing does not allocate; it is safe for concurrent use.
type JSONWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	err error
	n   uint64
}

// NewJSONWriter returns a JSONWriter that writes to w. Call Flush when
// done.
func NewJSONWriter(w io.Writer) *JSONWriter {
	return &JSONWriter{w: bufio.NewWriterSize(w, 1<<16), buf: make([]byte, 0, 256)}
}

// Trace writes r without a host.
func (j *JSONWriter) Trace(r *Record) { j.write(r, "") }

// Host returns a Tracer that writes records tagged "host": name.
func (j *JSONWriter) Host(name string) Tracer { return hostTracer{j, name} }

type hostTracer struct {
	j    *JSONWriter
	host string
}

func (h hostTracer) Trace(r *Record) { h.j.write(r, h.host) }

// Records returns how many records have been written.
func (j *JSONWriter) Records() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.n
}

// Flush writes buffered records to the underlying writer and returns the
// first error met since the JSONWriter was made.
func (j *JSONWriter) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = j.w.Flush()
	}
	return j.err
}

// Err returns the first write error, if any. Tracers cannot return
// errors, so a JSONWriter keeps the first one and drops later records.
func (j *JSONWriter) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// keys says which keys a kind's records carry.
type keys uint8

const (
	keyPacket keys = 1 << iota // qpn, psn, ev, plane, bytes
	keyEV                      // ev, plane (without the packet keys)
	keyStates                  // from, to
	keyReason                  // reason
	keyCwnd                    // cwnd, inflight
)

// kindKeys is the schema: the keys each kind has beyond t, kind, host
// and qpn.
func kindKeys(k Kind) keys {
	switch k {
	case PacketSent, PacketRetransmitted, PacketAcked, PacketLost, PacketTrimmed, PacketReceived, ProbeSent, SACKSent:
		return keyPacket
	case PacketNacked, PacketDropped:
		return keyPacket | keyReason
	case EVState:
		return keyEV | keyStates | keyReason
	case CwndChanged:
		return keyCwnd
	case QPState:
		return keyStates
	}
	return keyPacket | keyEV | keyStates | keyReason | keyCwnd // unknown kinds: everything
}

func (j *JSONWriter) write(r *Record, host string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	b := AppendJSON(j.buf[:0], r, host)
	b = append(b, '\n')
	j.buf = b
	if _, err := j.w.Write(b); err != nil {
		j.err = err
		return
	}
	j.n++
}

// AppendJSON appends the JSON object for r (tagged with host, unless
// empty) to b, without a newline. It does not allocate when b has room.
func AppendJSON(b []byte, r *Record, host string) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, int64(r.Time), 10)
	b = append(b, `,"kind":`...)
	if r.Kind > 0 && r.Kind < numKinds {
		b = append(b, '"')
		b = append(b, kindNames[r.Kind]...)
		b = append(b, '"')
	} else {
		b = appendString(b, r.Kind.String())
	}
	if host != "" {
		b = append(b, `,"host":`...)
		b = appendString(b, host)
	}
	b = append(b, `,"qpn":`...)
	b = strconv.AppendUint(b, uint64(r.QPN), 10)
	k := kindKeys(r.Kind)
	if k&keyPacket != 0 {
		b = append(b, `,"psn":`...)
		b = strconv.AppendUint(b, uint64(r.PSN), 10)
	}
	if k&(keyPacket|keyEV) != 0 {
		b = appendEV(append(b, `,"ev":`...), r.EV)
		b = append(b, `,"plane":`...)
		b = strconv.AppendInt(b, int64(r.Plane), 10)
	}
	if k&keyPacket != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, int64(r.Bytes), 10)
	}
	if k&keyCwnd != 0 {
		b = append(b, `,"cwnd":`...)
		b = strconv.AppendInt(b, int64(r.Cwnd), 10)
		b = append(b, `,"inflight":`...)
		b = strconv.AppendInt(b, int64(r.Inflight), 10)
	}
	if k&keyStates != 0 {
		b = appendString(append(b, `,"from":`...), r.From)
		b = appendString(append(b, `,"to":`...), r.To)
	}
	if k&keyReason != 0 {
		b = appendString(append(b, `,"reason":`...), r.Reason)
	}
	return append(b, '}')
}

func appendEV(b []byte, ev uint32) []byte {
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

// JSONRecord is one line of a JSON-lines trace as read back: the record
// and the host it was tagged with.
type JSONRecord struct {
	Record
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

// JSONReader reads a JSON-lines trace.
type JSONReader struct {
	sc   *bufio.Scanner
	line int
}

// NewJSONReader returns a reader of the JSON-lines trace in r.
func NewJSONReader(r io.Reader) *JSONReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	return &JSONReader{sc: sc}
}

// Next returns the next record, or io.EOF after the last one. Blank lines
// are skipped; a line that does not fit the schema is an error naming it.
func (jr *JSONReader) Next() (JSONRecord, error) {
	for jr.sc.Scan() {
		jr.line++
		text := jr.sc.Bytes()
		if len(text) == 0 {
			continue
		}
		var l jsonLine
		if err := json.Unmarshal(text, &l); err != nil {
			return JSONRecord{}, fmt.Errorf("trace: line %d: %v", jr.line, err)
		}
		if l.T == nil || l.Kind == nil {
			return JSONRecord{}, fmt.Errorf("trace: line %d: missing \"t\" or \"kind\"", jr.line)
		}
		k, ok := ParseKind(*l.Kind)
		if !ok {
			return JSONRecord{}, fmt.Errorf("trace: line %d: unknown kind %q", jr.line, *l.Kind)
		}
		var ev uint64
		if l.EV != "" {
			var err error
			if ev, err = strconv.ParseUint(l.EV, 0, 32); err != nil {
				return JSONRecord{}, fmt.Errorf("trace: line %d: ev %q: not a 32-bit number", jr.line, l.EV)
			}
		}
		return JSONRecord{Host: l.Host, Record: Record{
			Time: mtime.Time(*l.T), Kind: k, QPN: l.QPN, PSN: l.PSN, EV: uint32(ev), Plane: l.Plane,
			Bytes: l.Bytes, Cwnd: l.Cwnd, Inflight: l.Inflight, From: l.From, To: l.To, Reason: l.Reason,
		}}, nil
	}
	if err := jr.sc.Err(); err != nil {
		return JSONRecord{}, fmt.Errorf("trace: line %d: %v", jr.line+1, err)
	}
	return JSONRecord{}, io.EOF
}
