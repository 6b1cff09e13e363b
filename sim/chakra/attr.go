package chakra

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// valueKind is the type of an attribute's value, as far as Node cares.
type valueKind uint8

const (
	kindNone valueKind = iota
	kindInt
	kindBool
	kindString
	kindBoolList
	kindOther // a double, a list, bytes: not an attribute Node reads
)

func (k valueKind) String() string {
	return [...]string{"no value", "an integer", "a bool", "a string", "a bool list", "another type"}[k]
}

// attrValue is a decoded AttributeProto value.
type attrValue struct {
	kind  valueKind
	i     int64
	s     string
	bools []bool
}

// parseAttr decodes an AttributeProto: its name and its one value. The
// integer kinds of the oneof (int32/64, uint32/64, sint32/64, fixed and
// sfixed 32/64) all read as an int64; a uint64 above MaxInt64 is an error.
func parseAttr(msg []byte) (name string, val attrValue, err error) {
	err = fields(msg, func(num protowire.Number, typ protowire.Type, v uint64, data []byte) error {
		if num == attrName {
			if typ != protowire.BytesType {
				return fmt.Errorf("attribute name has wire type %d", typ)
			}
			name = string(data)
			return nil
		}
		want, ok := attrWireType[num]
		if !ok {
			if num > attrName+1 { // doc_string (2) and unknown fields are skipped
				val = attrValue{kind: kindOther}
			}
			return nil
		}
		if typ != want {
			return fmt.Errorf("attribute value field %d has wire type %d, want %d", num, typ, want)
		}
		switch num {
		case 7: // int32
			val = attrValue{kind: kindInt, i: int64(int32(v))}
		case 15: // sint32
			val = attrValue{kind: kindInt, i: int64(int32(protowire.DecodeZigZag(v & math.MaxUint32)))}
		case 9: // int64
			val = attrValue{kind: kindInt, i: int64(v)}
		case 17: // sint64
			val = attrValue{kind: kindInt, i: protowire.DecodeZigZag(v)}
		case 11, 19: // uint32, fixed32
			val = attrValue{kind: kindInt, i: int64(uint32(v))}
		case 23: // sfixed32
			val = attrValue{kind: kindInt, i: int64(int32(uint32(v)))}
		case 13, 21, 25: // uint64, fixed64, sfixed64
			if num != 25 && v > math.MaxInt64 {
				return fmt.Errorf("attribute %q: %d does not fit an int64", name, v)
			}
			val = attrValue{kind: kindInt, i: int64(v)}
		case 27:
			val = attrValue{kind: kindBool, i: int64(v)}
			if v > 1 {
				val.i = 1
			}
		case 29:
			val = attrValue{kind: kindString, s: string(data)}
		case 28:
			bools, err := parseBoolList(data)
			if err != nil {
				return fmt.Errorf("attribute %q: %v", name, err)
			}
			val = attrValue{kind: kindBoolList, bools: bools}
		}
		return nil
	})
	return name, val, err
}

// attrWireType gives the wire type of each AttributeProto value field
// Node reads.
var attrWireType = map[protowire.Number]protowire.Type{
	7: protowire.VarintType, 9: protowire.VarintType, 11: protowire.VarintType,
	13: protowire.VarintType, 15: protowire.VarintType, 17: protowire.VarintType,
	19: protowire.Fixed32Type, 21: protowire.Fixed64Type, 23: protowire.Fixed32Type,
	25: protowire.Fixed64Type, 27: protowire.VarintType, 28: protowire.BytesType,
	29: protowire.BytesType,
}

// parseBoolList decodes a BoolList message: repeated bool values = 1,
// packed or not.
func parseBoolList(msg []byte) ([]bool, error) {
	var out []bool
	err := fields(msg, func(num protowire.Number, typ protowire.Type, v uint64, data []byte) error {
		if num != 1 {
			return nil
		}
		switch typ {
		case protowire.VarintType:
			out = append(out, v != 0)
		case protowire.BytesType:
			for len(data) > 0 {
				b, n := protowire.ConsumeVarint(data)
				if n < 0 {
					return protowire.ParseError(n)
				}
				out = append(out, b != 0)
				data = data[n:]
			}
		default:
			return fmt.Errorf("bool list has wire type %d", typ)
		}
		return nil
	})
	return out, err
}

// setAttr applies one AttributeProto to the node. Attributes the
// simulator does not use are ignored; one it uses with the wrong type of
// value is an error.
func (nd *Node) setAttr(msg []byte) error {
	name, v, err := parseAttr(msg)
	if err != nil {
		return err
	}
	want := kindInt
	switch name {
	case "comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag":
	case "is_cpu_op":
		want = kindBool
	case "pg_name":
		want = kindString
	case "involved_dim":
		want = kindBoolList
	default:
		return nil
	}
	if v.kind != want {
		return fmt.Errorf("attribute %s is %v, want %v", name, v.kind, want)
	}
	switch name {
	case "comm_type":
		if v.i < 0 || v.i > int64(Barrier) {
			return fmt.Errorf("comm_type %d is not a collective (0..%d)", v.i, Barrier)
		}
		nd.Coll, nd.has = Collective(v.i), nd.has|hasCommType
	case "comm_size":
		if v.i < 0 {
			return fmt.Errorf("comm_size %d is negative", v.i)
		}
		nd.Bytes, nd.has = uint64(v.i), nd.has|hasCommSize
	case "comm_src":
		nd.Src, nd.has = v.i, nd.has|hasCommSrc
	case "comm_dst":
		nd.Dst, nd.has = v.i, nd.has|hasCommDst
	case "comm_tag":
		nd.Tag, nd.has = v.i, nd.has|hasCommTag
	case "is_cpu_op":
		nd.CPU = v.i != 0
	case "pg_name":
		nd.Group = v.s
	case "involved_dim":
		nd.InvolvedDim = v.bools
	}
	return nil
}
