package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
)

// sendRows sends an optional RowDescription, the rows and CommandComplete.
func (ss *session) sendRows(cols []column, rows [][]any, formats []int16, describe bool, tag string) error {
	fmts := make([]int16, len(cols))
	switch len(formats) {
	case 0:
	case 1:
		for i := range fmts {
			fmts[i] = formats[0]
		}
	default:
		if len(formats) != len(cols) {
			return pgErrorf("08P01", "bind gave %d result formats for %d columns", len(formats), len(cols))
		}
		copy(fmts, formats)
	}
	if describe {
		ss.be.Send(rowDescription(cols, fmts))
	}
	for _, r := range rows {
		if len(r) != len(cols) {
			return fmt.Errorf("row of %d values for %d columns", len(r), len(cols))
		}
		vals := make([][]byte, len(r))
		for j, v := range r {
			b, err := encode(v, cols[j].oid, fmts[j])
			if err != nil {
				return err
			}
			vals[j] = b
		}
		ss.be.Send(&pgproto3.DataRow{Values: vals})
	}
	ss.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
	return nil
}

func rowDescription(cols []column, fmts []int16) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{}
	for i, c := range cols {
		size := int16(-1)
		switch c.oid {
		case oidInt8, oidFloat8:
			size = 8
		case oidInt4:
			size = 4
		case oidInt2:
			size = 2
		case oidBool:
			size = 1
		case oidDate:
			size = 4
		case oidTimestamp:
			size = 8
		}
		var f int16
		if fmts != nil {
			f = fmts[i]
		}
		rd.Fields = append(rd.Fields, pgproto3.FieldDescription{Name: []byte(c.name), DataTypeOID: c.oid, DataTypeSize: size, TypeModifier: -1, Format: f})
	}
	return rd
}

// encode writes v as a value of type oid in format (0 text, 1 binary).
func encode(v any, oid uint32, format int16) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if format != 0 && format != 1 {
		return nil, pgErrorf("08P01", "result format %d: want 0 (text) or 1 (binary)", format)
	}
	switch oid {
	case oidFloat8, oidInt8:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		case int:
			f = float64(x)
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		default:
			n, err := strconv.ParseFloat(fmt.Sprint(v), 64)
			if err != nil {
				return nil, fmt.Errorf("value %v is not a number", v)
			}
			f = n
		}
		if oid == oidInt8 {
			if f != math.Trunc(f) || math.Abs(f) > 1<<62 {
				return nil, fmt.Errorf("value %v is not an integer", v)
			}
			if format == 1 {
				return binary.BigEndian.AppendUint64(nil, uint64(int64(f))), nil
			}
			return []byte(strconv.FormatInt(int64(f), 10)), nil
		}
		if format == 1 {
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
		}
		return []byte(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case oidInt4, oidInt2:
		n, err := strconv.ParseInt(fmt.Sprint(v), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("value %v is not a 32-bit integer", v)
		}
		if format == 1 && oid == oidInt2 {
			return binary.BigEndian.AppendUint16(nil, uint16(int16(n))), nil
		}
		if format == 1 {
			return binary.BigEndian.AppendUint32(nil, uint32(int32(n))), nil
		}
		return []byte(strconv.FormatInt(n, 10)), nil
	case oidDate, oidTimestamp:
		return encodeTemporal(v, oid, format)
	case oidBool:
		b, _ := v.(bool)
		if format == 1 {
			if b {
				return []byte{1}, nil
			}
			return []byte{0}, nil
		}
		if b {
			return []byte("t"), nil
		}
		return []byte("f"), nil
	}
	return []byte(fmt.Sprint(v)), nil
}
