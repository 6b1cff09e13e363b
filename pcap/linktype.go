package pcap

import "fmt"

// LinkType is a LINKTYPE_ value (the tcpdump.org link-layer header types
// registry): what the bytes of a captured packet start with.
type LinkType uint16

// The link types this package writes or `mrc dump` decodes.
const (
	LinkNull      LinkType = 0   // BSD loopback: 4-byte address family, host byte order
	LinkEthernet  LinkType = 1   // Ethernet II (no FCS): what the Writer produces
	LinkRaw       LinkType = 101 // raw IP, version from the first nibble
	LinkLoop      LinkType = 108 // OpenBSD loopback: 4-byte address family, big-endian
	LinkLinuxSLL  LinkType = 113 // Linux "cooked" capture v1 (tcpdump -i any)
	LinkIPv4      LinkType = 228 // raw IPv4
	LinkIPv6      LinkType = 229 // raw IPv6
	LinkLinuxSLL2 LinkType = 276 // Linux "cooked" capture v2 (tcpdump -i any, newer)
)

func (l LinkType) String() string {
	switch l {
	case LinkNull:
		return "NULL"
	case LinkEthernet:
		return "ETHERNET"
	case LinkRaw:
		return "RAW"
	case LinkLoop:
		return "LOOP"
	case LinkLinuxSLL:
		return "LINUX_SLL"
	case LinkIPv4:
		return "IPV4"
	case LinkIPv6:
		return "IPV6"
	case LinkLinuxSLL2:
		return "LINUX_SLL2"
	}
	return fmt.Sprintf("LinkType(%d)", uint16(l))
}

// Direction says which way a captured packet went through its interface
// (pcapng epb_flags bits 0-1).
type Direction uint8

const (
	DirUnknown  Direction = 0 // not recorded
	DirInbound  Direction = 1 // received on the interface
	DirOutbound Direction = 2 // sent on the interface
)

func (d Direction) String() string {
	switch d {
	case DirUnknown:
		return "unknown"
	case DirInbound:
		return "in"
	case DirOutbound:
		return "out"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// EtherType values of the frames MRC uses.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86DD
	EtherTypeVLAN = 0x8100 // IEEE 802.1Q tag
	EtherTypeQinQ = 0x88A8 // IEEE 802.1ad service tag
)

// EthernetLen is the length of an Ethernet II header; MinFrameLen the
// shortest Ethernet frame without its FCS. Shorter frames are padded.
const (
	EthernetLen = 14
	MinFrameLen = 60
)
