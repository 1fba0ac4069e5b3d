// Column projections: how a bound table reads each server column as its
// declared engine-neutral type.

package clickhouse

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/engine"
)

// typeRE strips the wrappers that do not change a column's values.
var typeRE = regexp.MustCompile(`^(?:Nullable|LowCardinality)\((.*)\)$`)

// baseType strips Nullable(...) and LowCardinality(...) from a type.
func baseType(t string) string {
	for {
		m := typeRE.FindStringSubmatch(t)
		if m == nil {
			return t
		}
		t = m[1]
	}
}

// project spells the read of a server column (quoted as col, of type typ)
// as the declared engine-neutral type. Only conversions that succeed for
// every value are accepted, so no row can make a later statement fail.
func project(col, typ string, c engine.Column) (string, error) {
	base := baseType(typ)
	accept := func(ok bool, want string) error {
		if ok {
			return nil
		}
		return fmt.Errorf("declared %s: want %s (or a view that converts it)", c.Type.Schema(), want)
	}
	signed := base == "Int8" || base == "Int16" || base == "Int32" || base == "Int64"
	small := base == "UInt8" || base == "UInt16" || base == "UInt32"
	isFloat := base == "Float32" || base == "Float64"
	switch c.Type {
	case engine.Integer, engine.Integer32:
		if err := accept(signed || small, "Int8, Int16, Int32, Int64, UInt8, UInt16 or UInt32 (a UInt64 can exceed Int64)"); err != nil {
			return "", err
		}
		if base == "Int64" {
			return col, nil // no conversion: the server's column as it is
		}
		return "CAST(" + col + " AS Nullable(Int64))", nil
	case engine.Double:
		if err := accept(isFloat || signed || small || base == "UInt64" || strings.HasPrefix(base, "Decimal"),
			"Float64, Float32, an integer type or a Decimal"); err != nil {
			return "", err
		}
		// Adding 0 turns -0 into 0 (IEEE 754), so that they are one group
		// key: ClickHouse groups by the bits of a Float64.
		x := "CAST(" + col + " AS Nullable(Float64))"
		if base == "Float64" {
			x = col // no conversion: isNaN and + 0 read it as it is
		}
		if isFloat && !c.KeepNaN {
			return "if(isNaN(" + x + "), CAST(NULL AS Nullable(Float64)), " + x + " + toFloat64(0))", nil
		}
		return x + " + toFloat64(0)", nil
	case engine.Boolean:
		if err := accept(base == "UInt8" || base == "Bool", "UInt8 (0 false, anything else true) or Bool"); err != nil {
			return "", err
		}
		return "CAST(" + col + " != 0 AS Nullable(UInt8))", nil
	case engine.Text:
		if err := accept(base == "String" || strings.HasPrefix(base, "Enum8(") || strings.HasPrefix(base, "Enum16("),
			"String or an Enum (FixedString pads its values with zero bytes: expose it through a view)"); err != nil {
			return "", err
		}
		if base == "String" {
			return col, nil
		}
		return enumText(col, base)
	case engine.Date:
		// A Date (Date32 on servers that have it) converts to its
		// number of days since 1970-01-01.
		if err := accept(base == "Date" || base == "Date32", "Date or Date32"); err != nil {
			return "", err
		}
		return "CAST(" + col + " AS Nullable(Int64))", nil
	case engine.Timestamp:
		// A DateTime is a Unix time in seconds: it reads as the UTC
		// time it denotes, whatever the column's or the server's time
		// zone, in microseconds.
		if err := accept(base == "DateTime" || strings.HasPrefix(base, "DateTime("), "DateTime (seconds; a DateTime64 through a view that converts it to DateTime)"); err != nil {
			return "", err
		}
		return "(CAST(" + col + " AS Nullable(Int64)) * 1000000)", nil
	}
	return "", fmt.Errorf("declared type %d is not one a catalog declares", c.Type)
}

// enumText spells the read of an Enum8 or Enum16 column (of type typ,
// without Nullable) as text: its number mapped to its name by a CASE of
// constants (multiIf). toString of a Nullable Enum reads the value stored under a
// NULL (0, no name of most enums) and fails, and ClickHouse evaluates
// every function over every row, NULLs included, so the NULL-safe read
// never names an enum value: the number (any value reads) picks the name
// and a NULL matches no WHEN.
func enumText(col, typ string) (string, error) {
	names, nums, err := enumValues(typ)
	if err != nil {
		return "", err
	}
	n := "CAST(" + col + " AS Nullable(Int16))"
	var b strings.Builder
	b.WriteString("multiIf(")
	for i, name := range names {
		b.WriteString(n + " = " + strconv.FormatInt(nums[i], 10) + ", " + Dialect.QuoteString(name) + ", ")
	}
	b.WriteString("CAST(NULL AS Nullable(String)))")
	return b.String(), nil
}

// enumValues reads the names and numbers of an Enum8('a' = 1, …) or
// Enum16 type as the server writes it (names quoted, with backslash
// escapes).
func enumValues(typ string) (names []string, nums []int64, err error) {
	open := strings.IndexByte(typ, '(')
	if open < 0 || !strings.HasSuffix(typ, ")") {
		return nil, nil, fmt.Errorf("cannot read the enum type %s", typ)
	}
	rest := typ[open+1 : len(typ)-1]
	bad := fmt.Errorf("cannot read the enum type %s", typ)
	for len(rest) > 0 {
		if rest[0] != '\'' {
			return nil, nil, bad
		}
		var name strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '\''; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				switch rest[i] {
				case 'n':
					name.WriteByte('\n')
				case 't':
					name.WriteByte('\t')
				case '0':
					name.WriteByte(0)
				default:
					name.WriteByte(rest[i])
				}
				continue
			}
			name.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return nil, nil, bad
		}
		rest = strings.TrimLeft(rest[i+1:], " ")
		if !strings.HasPrefix(rest, "=") {
			return nil, nil, bad
		}
		rest = strings.TrimLeft(rest[1:], " ")
		end := strings.IndexByte(rest, ',')
		if end < 0 {
			end = len(rest)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(rest[:end]), 10, 64)
		if err != nil {
			return nil, nil, bad
		}
		names, nums = append(names, name.String()), append(nums, n)
		rest = strings.TrimLeft(strings.TrimPrefix(rest[end:], ","), " ")
	}
	if len(names) == 0 {
		return nil, nil, bad
	}
	return names, nums, nil
}
