// Package dump decodes captured MRC packets into every header field and
// prints them as text or JSON: what `mrc dump` shows. It decodes the link
// layer (Ethernet, Linux cooked, loopback, raw IP), IPv6 with SRv6 uSID
// destinations, an SRH and IPv6-in-IPv6 encapsulation (and IPv4), UDP, and
// every MRC header after the BTH: METH, TSETH, RETH, ImmDt, AETH,
// SETH+CC_STATE, NETH, PETH, ERTH and EETH. It checks the UDP checksum and
// the ICRC, shows SACK bitmaps as PSN ranges, NACK reasons by name and the
// EV with its plane and path. The RoCEv2 RC packets of our RoCE baseline
// (package roce) are decoded too, with their BTH, RETH, ImmDt and AETH.
//
// Whatever it is given, it does not fail: what it cannot decode
// (truncated headers, non-MRC packets, unknown opcodes, inconsistent
// lengths, bad checksums) is listed in Frame.Problems, after the fields it
// could decode. docs/dump.md describes the output.
package dump

// Frame is one decoded packet. Its JSON encoding is the output of
// `mrc dump --json`, one object per line; docs/dump.md is the schema.
// Headers that are absent are nil and omitted.
type Frame struct {
	Number    int    `json:"n"`                    // 1-based position in the capture
	TimeNS    int64  `json:"time_ns"`              // capture timestamp, ns since 1970 (simulations: mtime)
	Interface int    `json:"iface"`                // capture point
	IfName    string `json:"iface_name,omitempty"` // its name, if the capture has one
	Dir       string `json:"dir,omitempty"`        // "in" or "out", if recorded
	CapLen    int    `json:"caplen"`               // bytes captured
	Len       int    `json:"len"`                  // bytes on the wire

	Summary string `json:"summary"` // one line, like Wireshark's Info column
	// MRC says the packet is UDP to the MRC port with a known MRC opcode.
	MRC bool `json:"mrc"`
	// RoCE says it is instead a RoCEv2 RC packet of the kinds our RoCE
	// baseline sends (RDMA WRITE, ACKNOWLEDGE, CNP), decoded with its
	// BTH, RETH, ImmDt and AETH; it has no EV.
	RoCE bool `json:"roce,omitempty"`
	// Trimmed says a switch cut the packet to its headers: the UDP
	// length ends right after the last MRC header.
	Trimmed bool `json:"trimmed,omitempty"`
	// CutTo is set when a switch trimmed the packet by cutting the frame
	// to this many bytes and left its lengths as they were (a fixed-size
	// trim, told by a trimmed DSCP on the outermost header); Trimmed is
	// set too.
	CutTo int `json:"cut_to,omitempty"`

	Link  *Link     `json:"link,omitempty"`
	IP    []*IP     `json:"ip,omitempty"` // outermost first
	SRH   *SRH      `json:"srh,omitempty"`
	UDP   *UDP      `json:"udp,omitempty"`
	EV    *EV       `json:"ev,omitempty"` // the EV the packet travels on
	BTH   *BTH      `json:"bth,omitempty"`
	METH  *METH     `json:"meth,omitempty"`
	TSETH *TSETH    `json:"tseth,omitempty"`
	RETH  *RETH     `json:"reth,omitempty"`
	ImmDt *ImmDt    `json:"immdt,omitempty"`
	AETH  *AETH     `json:"aeth,omitempty"`
	SACK  *SACK     `json:"sack,omitempty"`
	NACK  *NACK     `json:"nack,omitempty"`
	PETH  *PETH     `json:"peth,omitempty"`
	ERTH  *ERTH     `json:"erth,omitempty"`
	EETH  *EETH     `json:"eeth,omitempty"`
	Data  *Payload  `json:"payload,omitempty"`
	ICRC  *Checksum `json:"icrc,omitempty"`

	// Problems lists what could not be decoded or verified, in the order
	// found. An MRC packet decoded and verified in full has none.
	Problems []string `json:"problems,omitempty"`
}

// Link is the link-layer header.
type Link struct {
	Type      string `json:"type"` // ETHERNET, LINUX_SLL, LINUX_SLL2, NULL, LOOP, RAW, IPV4, IPV6
	Src       string `json:"src,omitempty"`
	Dst       string `json:"dst,omitempty"`
	VLANs     []int  `json:"vlans,omitempty"` // 802.1Q/802.1ad VLAN ids, outermost first
	EtherType int    `json:"ethertype"`
	Padding   int    `json:"padding,omitempty"` // bytes after the datagram (minimum-frame padding)
}

// IP is an IPv6 or IPv4 header.
type IP struct {
	Version      int    `json:"version"`
	DSCP         int    `json:"dscp"`
	ECN          string `json:"ecn"` // Not-ECT, ECT(1), ECT(0), CE
	FlowLabel    int    `json:"flow_label"`
	PayloadLen   int    `json:"payload_len"` // IPv6 payload length; IPv4 total length minus header
	NextHeader   int    `json:"next_header"` // IPv4: protocol
	HopLimit     int    `json:"hop_limit"`   // IPv4: TTL
	Src          string `json:"src"`
	Dst          string `json:"dst"`
	USIDBlock    string `json:"usid_block,omitempty"` // destination as a uSID container: its block
	USIDs        []int  `json:"usids,omitempty"`      // and its CSIDs up to the first zero, active first
	IPv4Checksum int    `json:"ipv4_checksum,omitempty"`
}

// SRH is a segment routing header (RFC 8754).
type SRH struct {
	NextHeader   int      `json:"next_header"`
	HdrExtLen    int      `json:"hdr_ext_len"`
	RoutingType  int      `json:"routing_type"`
	SegmentsLeft int      `json:"segments_left"`
	LastEntry    int      `json:"last_entry"`
	Flags        int      `json:"flags"`
	Tag          int      `json:"tag"`
	Segments     []string `json:"segments"` // wire order: [0] is the final segment
}

// UDP is the UDP header.
type UDP struct {
	SrcPort  int       `json:"src_port"`
	DstPort  int       `json:"dst_port"`
	Length   int       `json:"length"`
	Checksum *Checksum `json:"checksum"`
}

// Checksum is a checksum read from the packet and whether it verified.
type Checksum struct {
	Value string `json:"value"` // hex
	// OK is true or false when the checksum could be verified, absent
	// when it could not (Note says why).
	OK   *bool  `json:"ok,omitempty"`
	Note string `json:"note,omitempty"`
}

// EV is an entropy value with its plane and path (wire.EV.Plane,
// wire.EV.Path).
type EV struct {
	Value uint32 `json:"value"`
	Hex   string `json:"hex"`
	Plane int    `json:"plane"`
	Path  int    `json:"path"`
}

// BTH is the base transport header.
type BTH struct {
	Opcode     int    `json:"opcode"`
	OpcodeName string `json:"opcode_name"`
	SE         bool   `json:"se"`
	M          bool   `json:"m"`
	PadCnt     int    `json:"pad_cnt"`
	TVer       int    `json:"tver"`
	PKey       int    `json:"pkey"`
	Resv8a     int    `json:"resv8a"` // RoCEv2 FECN/BECN byte
	DestQP     int    `json:"dest_qp"`
	A          bool   `json:"a"`   // AckReq
	Rtx        bool   `json:"rtx"` // retransmission
	TS         bool   `json:"ts"`  // TSETH present
	Resv       int    `json:"resv"`
	PSN        int    `json:"psn"`
}

// METH is the MRC message header.
type METH struct {
	RQMSN int `json:"rqmsn"`
	MSN   int `json:"msn"`
}

// TSETH is a timestamp header (also the tail of PETH and ERTH).
type TSETH struct {
	TxTimestamp int  `json:"tx_timestamp"`
	TSR         bool `json:"tsr"`
	Resv        int  `json:"resv"`
	FType       int  `json:"ftype"`
}

// RETH is the RDMA extended transport header.
type RETH struct {
	VA     string `json:"va"` // hex: 64 bits do not fit a JSON number exactly
	RKey   uint32 `json:"rkey"`
	DMALen uint32 `json:"dma_len"`
}

// ImmDt is the immediate data.
type ImmDt struct {
	Value uint32 `json:"value"`
}

// AETH is the RoCE ACK extended transport header.
type AETH struct {
	Syndrome     int    `json:"syndrome"`
	SyndromeName string `json:"syndrome_name"`
	MSN          int    `json:"msn"`
}

// SACK is the SETH and its CC_STATE.
type SACK struct {
	Type         int      `json:"type"`
	NextHdr      int      `json:"next_hdr"`
	M            int      `json:"m"`
	MName        string   `json:"m_name"` // NONE, SKIP_ONCE, ALWAYS_SKIP
	Resv1        int      `json:"resv1"`
	PR           bool     `json:"pr"`
	Rtx          bool     `json:"rtx"` // the trigger was a retransmission (ours: docs/wire.md)
	AckPSNOffset int      `json:"ack_psn_offset"`
	AckPSN       int      `json:"ack_psn"` // cack_psn + ack_psn_offset
	Entropy      *EV      `json:"entropy"` // the reflected EV
	SPDCID       int      `json:"spdcid"`
	DPDCID       int      `json:"dpdcid"`
	Resv12       int      `json:"resv12"`
	CackPSN      int      `json:"cack_psn"`
	CCType       int      `json:"cc_type"`
	CCFlags      int      `json:"cc_fl"`
	MPR          int      `json:"mpr"` // units of 128 PSNs
	SackOffset   int      `json:"sack_offset"`
	SackBase     int      `json:"sack_base"`   // PSN of bitmap bit 0
	SackBitmap   string   `json:"sack_bitmap"` // hex
	Sacked       [][2]int `json:"sacked"`      // PSN ranges the bitmap says arrived, inclusive
	CCState      CCState  `json:"cc_state"`
}

// CCState is the congestion-control state block of a SACK.
type CCState struct {
	TxTimestamp int  `json:"tx_timestamp"`
	Resv        int  `json:"resv"`
	OOOCount    int  `json:"ooo_count"`
	RC          bool `json:"r_c"`
	RcvCwndPen  int  `json:"rcv_cwnd_pen"`
	RcvdBytes   int  `json:"rcvd_bytes"` // units of 256 bytes
}

// NACK is the NETH.
type NACK struct {
	Type        int    `json:"type"`
	NextHdr     int    `json:"next_hdr"`
	Resv1       int    `json:"resv1"`
	CE          bool   `json:"ce"` // the NACKed packet arrived CE-marked (byte 1 b5, our choice)
	Reason      int    `json:"reason"`
	ReasonName  string `json:"reason_name"` // TRIMMED, TRIMMED_LASTHOP, ...
	VendorInfo  int    `json:"vendor_info"`
	Entropy     *EV    `json:"entropy"`
	SPDCID      int    `json:"spdcid"`
	DPDCID      int    `json:"dpdcid"`
	Resv12      int    `json:"resv12"`
	NackPSN     int    `json:"nack_psn"`
	CCType      int    `json:"cc_type"`
	CCFlags     int    `json:"cc_fl"`
	Resv17      int    `json:"resv17"`
	TxTimestamp int    `json:"tx_timestamp"`
}

// PETH is the reliability probe header.
type PETH struct {
	Type       int   `json:"type"`
	NextHdr    int   `json:"next_hdr"`
	Resv1      int   `json:"resv1"`
	Resv2      int   `json:"resv2"`
	VendorInfo int   `json:"vendor_info"`
	ProbeID    int   `json:"probe_id"`
	Resv6      int   `json:"resv6"`
	SPDCID     int   `json:"spdcid"`
	DPDCID     int   `json:"dpdcid"`
	TSETH      TSETH `json:"tseth"`
}

// ERTH is the endpoint request header.
type ERTH struct {
	Type           int    `json:"type"`
	NextHdr        int    `json:"next_hdr"`
	Resv1          int    `json:"resv1"`
	Op             int    `json:"op"`
	OpName         string `json:"op_name"` // PORT_STATUS_UPDATE, EV_PROBE
	Resv2          int    `json:"resv2"`
	VendorInfo     int    `json:"vendor_info"`
	PortStatusMask uint32 `json:"port_status_mask"`
	PlanesUp       []int  `json:"planes_up"` // bits set in the mask: bit i is plane i (OCP port i+1)
	Resv8          uint32 `json:"resv8"`
	TSETH          TSETH  `json:"tseth"`
}

// EETH is the endpoint response header.
type EETH struct {
	Type           int    `json:"type"`
	NextHdr        int    `json:"next_hdr"`
	Resv1          int    `json:"resv1"`
	Op             int    `json:"op"`
	OpName         string `json:"op_name"`
	Resv2          int    `json:"resv2"`
	PortStatusMask uint32 `json:"port_status_mask"`
	PlanesUp       []int  `json:"planes_up"`
	Resv8          string `json:"resv8"`        // hex, 20 bytes
	TxTimestamp    int    `json:"tx_timestamp"` // echoed from the request: what matches the two
	Resv30         string `json:"resv30"`       // hex, 6 bytes
}

// Payload describes the payload of a data packet.
type Payload struct {
	Len      int `json:"len"`      // as the length fields declare it
	Captured int `json:"captured"` // bytes present in the capture
	Pad      int `json:"pad"`
	// NotCaptured counts the bytes of the datagram (payload, pad, ICRC)
	// the capture left out on purpose: a simulation's phantom payload or
	// a snap length. Missing bytes the frame length does not account for
	// are a problem instead.
	NotCaptured int `json:"not_captured,omitempty"`
}
