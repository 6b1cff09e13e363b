package dump

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// summary returns the one-line description of f.
func summary(f *Frame) string {
	var s strings.Builder
	if f.BTH == nil || !f.MRC && !f.RoCE {
		if len(f.Problems) > 0 {
			return f.Problems[0]
		}
		return "not MRC"
	}
	h := f.BTH
	s.WriteString(h.OpcodeName)
	fmt.Fprintf(&s, " qp 0x%06x", h.DestQP)
	switch {
	case f.RoCE:
		fmt.Fprintf(&s, " psn %d", h.PSN)
		if f.RETH != nil {
			fmt.Fprintf(&s, " va %s dma_len %d", f.RETH.VA, f.RETH.DMALen)
		}
		if f.ImmDt != nil {
			fmt.Fprintf(&s, " imm 0x%08x", f.ImmDt.Value)
		}
		if f.AETH != nil {
			fmt.Fprintf(&s, " %s msn %d", f.AETH.SyndromeName, f.AETH.MSN)
		}
		if h.Resv8a&0x40 != 0 {
			s.WriteString(" BECN")
		}
	case f.METH != nil: // data
		fmt.Fprintf(&s, " psn %d msn %d", h.PSN, f.METH.MSN)
		if f.RETH != nil {
			fmt.Fprintf(&s, " va %s", f.RETH.VA)
		}
		if f.ImmDt != nil {
			fmt.Fprintf(&s, " imm 0x%08x", f.ImmDt.Value)
		}
	case f.SACK != nil:
		fmt.Fprintf(&s, " cack %d sacked %s m %s", f.SACK.CackPSN, Ranges(f.SACK.Sacked), f.SACK.MName)
		if f.SACK.PR {
			s.WriteString(" pr")
		}
		if f.SACK.Rtx {
			s.WriteString(" rtx")
		}
		fmt.Fprintf(&s, " for ev %s", evText(f.SACK.Entropy))
	case f.NACK != nil:
		fmt.Fprintf(&s, " %s psn %d", f.NACK.ReasonName, f.NACK.NackPSN)
		if f.NACK.CE {
			s.WriteString(" ce")
		}
		fmt.Fprintf(&s, " for ev %s", evText(f.NACK.Entropy))
	case f.PETH != nil:
		fmt.Fprintf(&s, " probe %d", f.PETH.ProbeID)
	case f.ERTH != nil:
		fmt.Fprintf(&s, " %s planes up %s", f.ERTH.OpName, ints(f.ERTH.PlanesUp))
	case f.EETH != nil:
		fmt.Fprintf(&s, " %s ts %d planes up %s", f.EETH.OpName, f.EETH.TxTimestamp, ints(f.EETH.PlanesUp))
	case f.AETH != nil:
		fmt.Fprintf(&s, " syndrome 0x%02x msn %d", f.AETH.Syndrome, f.AETH.MSN)
	}
	if f.EV != nil {
		fmt.Fprintf(&s, " ev %s", evText(f.EV))
	}
	for _, fl := range []struct {
		on   bool
		name string
	}{{h.Rtx, "RTX"}, {h.TS, "TS"}, {h.A, "ACKREQ"}, {len(f.IP) > 0 && f.IP[0].ECN == "CE", "CE"}, {f.Trimmed, "TRIMMED"}} {
		if fl.on {
			s.WriteString(" " + fl.name)
		}
	}
	if f.Data != nil {
		fmt.Fprintf(&s, " len %d", f.Data.Len)
		if f.Data.NotCaptured > 0 {
			s.WriteString(" (payload not captured)")
		}
	}
	if len(f.Problems) > 0 {
		fmt.Fprintf(&s, " [%d problem", len(f.Problems))
		if len(f.Problems) > 1 {
			s.WriteString("s")
		}
		s.WriteString("]")
	}
	return s.String()
}

func evText(e *EV) string {
	if e == nil {
		return "-"
	}
	return fmt.Sprintf("%s (plane %d, path %d)", e.Hex, e.Plane, e.Path)
}

// Ranges formats PSN ranges as "5-7,9"; "none" when empty.
func Ranges(r [][2]int) string {
	if len(r) == 0 {
		return "none"
	}
	var s []string
	for _, x := range r {
		if x[0] == x[1] {
			s = append(s, strconv.Itoa(x[0]))
		} else {
			s = append(s, fmt.Sprintf("%d-%d", x[0], x[1]))
		}
	}
	return strings.Join(s, ",")
}

func ints(v []int) string {
	if len(v) == 0 {
		return "none"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func onoff(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteText writes f as text: a line with the capture metadata and the
// summary, then (unless brief) one line per header with every field, and
// a line per problem.
func WriteText(w io.Writer, f *Frame, brief bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %d.%09d", f.Number, f.TimeNS/1e9, f.TimeNS%1e9)
	if f.IfName != "" {
		fmt.Fprintf(&b, " %s", f.IfName)
	} else {
		fmt.Fprintf(&b, " if%d", f.Interface)
	}
	if f.Dir != "" {
		fmt.Fprintf(&b, " %s", f.Dir)
	}
	fmt.Fprintf(&b, " len %d", f.Len)
	if f.CapLen != f.Len {
		fmt.Fprintf(&b, " (captured %d)", f.CapLen)
	}
	fmt.Fprintf(&b, ": %s\n", f.Summary)
	if brief {
		for _, p := range f.Problems {
			fmt.Fprintf(&b, "  ! %s\n", p)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	line := func(name, format string, args ...any) {
		fmt.Fprintf(&b, "  %-9s "+format+"\n", append([]any{name}, args...)...)
	}
	if l := f.Link; l != nil {
		switch {
		case l.Src != "":
			line("link", "%s %s > %s ethertype 0x%04x", l.Type, l.Src, l.Dst, l.EtherType)
		default:
			line("link", "%s ethertype 0x%04x", l.Type, l.EtherType)
		}
		if len(l.VLANs) > 0 {
			line("", "vlans %s", ints(l.VLANs))
		}
		if l.Padding > 0 {
			line("", "padding %d bytes", l.Padding)
		}
	}
	for _, ip := range f.IP {
		name := "ipv6"
		if ip.Version == 4 {
			name = "ipv4"
			line(name, "%s > %s dscp %d ecn %s len %d proto %d ttl %d checksum 0x%04x",
				ip.Src, ip.Dst, ip.DSCP, ip.ECN, ip.PayloadLen, ip.NextHeader, ip.HopLimit, ip.IPv4Checksum)
			continue
		}
		line(name, "%s > %s dscp %d ecn %s flow 0x%05x plen %d nh %d hlim %d",
			ip.Src, ip.Dst, ip.DSCP, ip.ECN, ip.FlowLabel, ip.PayloadLen, ip.NextHeader, ip.HopLimit)
		if len(ip.USIDs) > 0 {
			var u []string
			for _, c := range ip.USIDs {
				u = append(u, fmt.Sprintf("%04x", c))
			}
			line("", "uSID block %s csids %s", ip.USIDBlock, strings.Join(u, " "))
		}
	}
	if s := f.SRH; s != nil {
		line("srh", "nh %d len %d type %d left %d last %d flags 0x%02x tag %d segments %s",
			s.NextHeader, s.HdrExtLen, s.RoutingType, s.SegmentsLeft, s.LastEntry, s.Flags, s.Tag, strings.Join(s.Segments, ", "))
	}
	if u := f.UDP; u != nil {
		line("udp", "%d > %d len %d checksum %s", u.SrcPort, u.DstPort, u.Length, ckText(u.Checksum))
	}
	if f.EV != nil {
		line("ev", "%s", evText(f.EV))
	}
	if h := f.BTH; h != nil {
		line("bth", "%s (0x%02x) se %d m %d pad %d tver %d pkey 0x%04x resv8a 0x%02x qp 0x%06x a %d rtx %d ts %d resv 0x%02x psn %d",
			h.OpcodeName, h.Opcode, onoff(h.SE), onoff(h.M), h.PadCnt, h.TVer, h.PKey, h.Resv8a, h.DestQP,
			onoff(h.A), onoff(h.Rtx), onoff(h.TS), h.Resv, h.PSN)
	}
	if m := f.METH; m != nil {
		line("meth", "rqmsn %d msn %d", m.RQMSN, m.MSN)
	}
	if t := f.TSETH; t != nil {
		line("tseth", "%s", tsText(t))
	}
	if r := f.RETH; r != nil {
		line("reth", "va %s rkey 0x%08x dma_len %d", r.VA, r.RKey, r.DMALen)
	}
	if i := f.ImmDt; i != nil {
		line("immdt", "0x%08x", i.Value)
	}
	if a := f.AETH; a != nil {
		line("aeth", "syndrome 0x%02x (%s) msn %d", a.Syndrome, a.SyndromeName, a.MSN)
	}
	if s := f.SACK; s != nil {
		line("seth", "type %d next_hdr %d m %d (%s) resv1 0x%02x pr %d rtx %d ack_psn_offset %d (psn %d)",
			s.Type, s.NextHdr, s.M, s.MName, s.Resv1, onoff(s.PR), onoff(s.Rtx), s.AckPSNOffset, s.AckPSN)
		line("", "entropy %s spdcid %d dpdcid %d resv12 %d cack_psn %d cc_type %d cc_fl %d mpr %d (%d psns)",
			evText(s.Entropy), s.SPDCID, s.DPDCID, s.Resv12, s.CackPSN, s.CCType, s.CCFlags, s.MPR, s.MPR*128)
		line("", "sack_offset %d (base %d) bitmap %s sacked %s", s.SackOffset, s.SackBase, s.SackBitmap, Ranges(s.Sacked))
		c := s.CCState
		line("cc_state", "tx_timestamp %d resv %d ooo_count %d r_c %d rcv_cwnd_pen %d rcvd_bytes %d (%d bytes)",
			c.TxTimestamp, c.Resv, c.OOOCount, onoff(c.RC), c.RcvCwndPen, c.RcvdBytes, c.RcvdBytes*256)
	}
	if n := f.NACK; n != nil {
		line("neth", "type %d next_hdr %d resv1 0x%02x ce %d reason 0x%02x (%s) vendor_info %d entropy %s",
			n.Type, n.NextHdr, n.Resv1, onoff(n.CE), n.Reason, n.ReasonName, n.VendorInfo, evText(n.Entropy))
		line("", "spdcid %d dpdcid %d resv12 %d nack_psn %d cc_type %d cc_fl %d resv17 %d tx_timestamp %d",
			n.SPDCID, n.DPDCID, n.Resv12, n.NackPSN, n.CCType, n.CCFlags, n.Resv17, n.TxTimestamp)
	}
	if p := f.PETH; p != nil {
		line("peth", "type %d next_hdr %d resv1 0x%02x resv2 %d vendor_info %d probe_id %d resv6 %d spdcid %d dpdcid %d %s",
			p.Type, p.NextHdr, p.Resv1, p.Resv2, p.VendorInfo, p.ProbeID, p.Resv6, p.SPDCID, p.DPDCID, tsText(&p.TSETH))
	}
	if r := f.ERTH; r != nil {
		line("erth", "type %d next_hdr %d resv1 0x%02x op %d (%s) resv2 %d vendor_info %d port_status_mask 0x%08x (planes up %s) resv8 0x%08x %s",
			r.Type, r.NextHdr, r.Resv1, r.Op, r.OpName, r.Resv2, r.VendorInfo, r.PortStatusMask, ints(r.PlanesUp), r.Resv8, tsText(&r.TSETH))
	}
	if r := f.EETH; r != nil {
		line("eeth", "type %d next_hdr %d resv1 0x%02x op %d (%s) resv2 %d port_status_mask 0x%08x (planes up %s) resv8 %s tx_timestamp %d resv30 %s",
			r.Type, r.NextHdr, r.Resv1, r.Op, r.OpName, r.Resv2, r.PortStatusMask, ints(r.PlanesUp), r.Resv8, r.TxTimestamp, r.Resv30)
	}
	if p := f.Data; p != nil {
		s := fmt.Sprintf("%d bytes (%d captured) pad %d", p.Len, p.Captured, p.Pad)
		if p.NotCaptured > 0 {
			s += fmt.Sprintf("; %d bytes of the datagram not captured (phantom payload or snap length)", p.NotCaptured)
		}
		line("payload", "%s", s)
	}
	switch {
	case f.CutTo > 0:
		line("trimmed", "cut to a %d-byte frame by a switch, lengths and checksums left as they were", f.CutTo)
	case f.Trimmed:
		line("trimmed", "payload, pad and ICRC removed by a switch")
	}
	if f.ICRC != nil {
		line("icrc", "%s", ckText(f.ICRC))
	}
	for _, p := range f.Problems {
		fmt.Fprintf(&b, "  ! %s\n", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func tsText(t *TSETH) string {
	return fmt.Sprintf("tx_timestamp %d tsr %d resv %d ftype %d", t.TxTimestamp, onoff(t.TSR), t.Resv, t.FType)
}

func ckText(c *Checksum) string {
	s := c.Value
	switch {
	case c.OK == nil:
	case *c.OK:
		s += " (ok)"
	default:
		s += " (BAD)"
	}
	if c.Note != "" {
		s += " [" + c.Note + "]"
	}
	return s
}
