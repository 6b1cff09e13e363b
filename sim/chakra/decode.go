package chakra

import (
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of et_def.proto.
const (
	metaVersion = 1

	nodeID       = 1
	nodeName     = 2
	nodeType     = 3
	nodeCtrlDeps = 4
	nodeDataDeps = 5
	nodeDuration = 7
	nodeAttr     = 10

	attrName = 1
)

// Parse decodes one rank's trace: a GlobalMetadata message, then Nodes,
// each preceded by its varint length. Fields it does not use are skipped,
// so newer schema versions that only add fields still parse. Errors wrap
// ErrFormat and name the message and its byte offset. Parse does not check
// the graph; Check does.
func Parse(b []byte) (*Trace, error) {
	t := &Trace{}
	for i, off := 0, 0; off < len(b); i++ {
		n, k := protowire.ConsumeVarint(b[off:])
		if k < 0 {
			return nil, fmt.Errorf("%w: message %d at byte %d: truncated length", ErrFormat, i, off)
		}
		if n > uint64(len(b)-off-k) {
			return nil, fmt.Errorf("%w: message %d at byte %d: length %d runs past the end (%d bytes left)", ErrFormat, i, off, n, len(b)-off-k)
		}
		msg := b[off+k : off+k+int(n)]
		var err error
		if i == 0 {
			t.Version, err = parseMetadata(msg)
		} else {
			var nd Node
			if nd, err = parseNode(msg); err == nil {
				t.Nodes = append(t.Nodes, nd)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: message %d at byte %d: %v", ErrFormat, i, off, err)
		}
		off += k + int(n)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty file (no GlobalMetadata)", ErrFormat)
	}
	return t, nil
}

// fields calls f for each field of msg with its number, wire type and the
// bytes of its value (for varints and fixed types, decoded into v).
func fields(msg []byte, f func(num protowire.Number, typ protowire.Type, v uint64, data []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		var v uint64
		var data []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(msg)
		case protowire.Fixed32Type:
			var v32 uint32
			v32, n = protowire.ConsumeFixed32(msg)
			v = uint64(v32)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(msg)
		case protowire.BytesType:
			data, n = protowire.ConsumeBytes(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %v", num, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := f(num, typ, v, data); err != nil {
			return err
		}
	}
	return nil
}

func parseMetadata(msg []byte) (version string, err error) {
	err = fields(msg, func(num protowire.Number, typ protowire.Type, _ uint64, data []byte) error {
		if num == metaVersion {
			if typ != protowire.BytesType {
				return fmt.Errorf("GlobalMetadata.version has wire type %d", typ)
			}
			version = string(data)
		}
		return nil
	})
	return version, err
}

func parseNode(msg []byte) (Node, error) {
	var nd Node
	err := fields(msg, func(num protowire.Number, typ protowire.Type, v uint64, data []byte) error {
		switch num {
		case nodeID, nodeType, nodeDuration:
			if typ != protowire.VarintType {
				return fmt.Errorf("node field %d has wire type %d, want a varint", num, typ)
			}
			switch num {
			case nodeID:
				nd.ID = v
			case nodeType:
				if v > math.MaxUint8 {
					return fmt.Errorf("node type %d", v)
				}
				nd.Type = NodeType(v)
			default:
				if v > uint64(math.MaxInt64/time.Microsecond) {
					return fmt.Errorf("duration_micros %d is too large", v)
				}
				nd.Duration = time.Duration(v) * time.Microsecond
			}
		case nodeName:
			if typ != protowire.BytesType {
				return fmt.Errorf("node name has wire type %d", typ)
			}
			nd.Name = string(data)
		case nodeCtrlDeps, nodeDataDeps:
			return addDeps(&nd, typ, v, data)
		case nodeAttr:
			if typ != protowire.BytesType {
				return fmt.Errorf("node attr has wire type %d", typ)
			}
			return nd.setAttr(data)
		}
		return nil
	})
	if err != nil && nd.Name != "" {
		err = fmt.Errorf("node %d (%s): %w", nd.ID, nd.Name, err)
	}
	return nd, err
}

// addDeps appends one dependency (unpacked) or a packed run of them.
func addDeps(nd *Node, typ protowire.Type, v uint64, data []byte) error {
	add := func(id uint64) {
		if !slices.Contains(nd.Deps, id) {
			nd.Deps = append(nd.Deps, id)
		}
	}
	switch typ {
	case protowire.VarintType:
		add(v)
	case protowire.BytesType:
		for len(data) > 0 {
			id, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return fmt.Errorf("dependency list: %v", protowire.ParseError(n))
			}
			add(id)
			data = data[n:]
		}
	default:
		return fmt.Errorf("dependency has wire type %d", typ)
	}
	return nil
}
