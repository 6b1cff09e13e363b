package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the Reader: it must never panic,
// must end (with EOF or an error), and every packet it returns must be
// consistent.
func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Options{})
	i, _ := w.AddInterface(Interface{Name: "a"})
	j, _ := w.AddInterface(Interface{Name: "b", LinkType: LinkIPv6, Snaplen: 40})
	d := datagram(f, 64, 64)
	_ = w.WriteDatagram(i, 1, DirOutbound, d, len(d))
	_ = w.WriteDatagram(j, 2, DirInbound, d, len(d)+100)
	_ = w.Flush()
	f.Add(buf.Bytes())
	f.Add(classic(binary.LittleEndian, false, uint32(LinkEthernet), d, d[:10]))
	f.Add(classic(binary.BigEndian, true, uint32(LinkRaw), d))
	f.Add([]byte{})
	f.Add([]byte{0x0A, 0x0D, 0x0D, 0x0A})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		for n := 0; ; n++ {
			if n > len(b) {
				t.Fatalf("more packets (%d) than input bytes", n)
			}
			p, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				if e.Skipped {
					continue
				}
				return
			}
			if len(p.Data) > p.OrigLen || p.Time < 0 || p.Interface < 0 {
				t.Fatalf("inconsistent packet: caplen %d origlen %d time %d iface %d", len(p.Data), p.OrigLen, p.Time, p.Interface)
			}
		}
	})
}
