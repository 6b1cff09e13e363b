package scenario

import (
	"bufio"
	"encoding/binary"
	"fmt"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/report"
	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/wire"
)

// pcapSink writes the packets a run captures to a pcapng file: one
// interface per capture point, simulated time as the timestamps.
type pcapSink struct {
	name   string
	filter pcap.Filter
	f      *report.File
	bw     *bufio.Writer
	w      *pcap.Writer
	seen   int // packets captured, before the filter
	ifaces map[string]int
	buf    []byte
	err    error
}

// open creates the sink's (temporary) file.
func (p *pcapSink) open() error {
	f, err := report.CreateFile(p.name)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := pcap.NewWriter(bw, pcap.Options{Application: "mrc sim"})
	if err != nil {
		f.Abort()
		return err
	}
	p.f, p.bw, p.w, p.ifaces = f, bw, w, map[string]int{}
	return nil
}

func (p *pcapSink) capture(c *sim.Captured) {
	p.seen++
	if p.err != nil || !p.filter.Zero() && !p.filter.Match(c.Data) {
		return
	}
	id, ok := p.ifaces[c.Iface]
	if !ok {
		if id, p.err = p.w.AddInterface(pcap.Interface{Name: c.Iface, Description: c.Desc}); p.err != nil {
			return
		}
		p.ifaces[c.Iface] = id
	}
	p.buf = append(p.buf[:0], c.Data...)
	fillChecksums(p.buf, c.WireLen)
	dir := pcap.DirInbound
	if c.Out {
		dir = pcap.DirOutbound
	}
	p.err = p.w.WriteDatagram(id, mtime.Time(c.Time/1000), dir, p.buf, c.WireLen)
}

// emptyWarning says why the capture holds no packets, or is "" when it
// holds some or was never opened. filter is the --pcap-filter text.
func (p *pcapSink) emptyWarning(filter string) string {
	switch {
	case p == nil || p.w == nil || p.w.Packets() > 0:
		return ""
	case p.seen > 0:
		return fmt.Sprintf("%s: no packets: --pcap-filter %q matched none of the %d captured (it selects MRC packets only: a RoCE run's never match)", p.name, filter, p.seen)
	}
	return fmt.Sprintf("%s: no packets: the capture points saw none", p.name)
}

// commit flushes the capture and puts the file in place; a nil or
// unopened sink does nothing.
func (p *pcapSink) commit() error {
	if p == nil || p.f == nil {
		return nil
	}
	err := p.err
	if e := p.w.Flush(); err == nil {
		err = e
	}
	if e := p.bw.Flush(); err == nil {
		err = e
	}
	if err != nil {
		p.f.Abort()
		return fmt.Errorf("writing %s: %w", p.name, err)
	}
	return p.f.Commit()
}

// abort removes the sink's temporary file, if any.
func (p *pcapSink) abort() {
	if p != nil && p.f != nil {
		p.f.Abort()
	}
}

// fillChecksums writes the UDP checksum and the ICRC of an MRC datagram
// that is whole (no phantom payload): the simulator leaves the NICs' CRC
// engines out, so they are zero, but a capture should show what a real
// NIC would have sent. Trimmed packets already carry their checksum; a
// packet with a phantom payload is left alone (the checksums would cover
// bytes that do not exist).
func fillChecksums(pkt []byte, wireLen int) {
	if wireLen != len(pkt) {
		return
	}
	var p wire.Packet
	if err := p.Decode(pkt); err != nil || p.Trimmed {
		return
	}
	udpOff := len(pkt) - int(p.UDP.Length)
	if udpOff < wire.IPv6Len || int(p.UDP.Length) < wire.UDPLen+wire.ICRCLen {
		return
	}
	udp := pkt[udpOff:]
	final := p.Final()
	if p.HasICRC {
		binary.LittleEndian.PutUint32(udp[len(udp)-wire.ICRCLen:], wire.ICRC(p.IP.Src, final, udp[:len(udp)-wire.ICRCLen]))
	}
	binary.BigEndian.PutUint16(udp[6:8], wire.UDPChecksum(p.IP.Src, final, udp))
}
