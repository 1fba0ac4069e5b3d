package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/schema"
)

// BucketKind says how a computed group key maps a row to a bin.
type BucketKind int

// The computed keys.
const (
	// WidthBucket is width_bucket(col, Lo, Hi, N): 0 below Lo, N+1 at or
	// above Hi, else 1 + floor((col − Lo)·N/(Hi − Lo)).
	WidthBucket BucketKind = iota
	// FloorBucket is floor(col / Width) * Width over a bounded column,
	// whose value is clamped to the declared bounds first.
	FloorBucket
	// CaseBucket is CASE WHEN cond THEN v … ELSE v END with literal values.
	CaseBucket
	// DateBucket is date_trunc(Field, Column) or EXTRACT(Field FROM
	// Column) over a date or timestamp column with declared bounds.
	DateBucket
	// TextBucket is a text function of text columns (lower(city),
	// substr(code, 1, 2), city || '/' || zone): public when every column
	// it reads has a public value list, else chosen by key selection.
	TextBucket
	// RangeBucket is a numeric expression of whole numbers whose derived
	// range [KLo, KHi] is bounded (LEAST(n, 10), age / 10 cast to int,
	// x % 7): its values are the integers of that range.
	RangeBucket
)

// Bucket is a computed group key whose possible values are public (they
// follow from the query and the declared bounds), so every bin is released,
// empty ones included, without key selection.
type Bucket struct {
	Kind   BucketKind
	Column string
	Lo, Hi float64
	N      int64
	Width  float64
	// KLo and KHi are the first and last bin numbers of a FloorBucket,
	// floor(lower / Width) and floor(upper / Width) over the declared
	// bounds, checked when the query is parsed: the key's values are
	// k·Width for k = KLo … KHi, at most MaxGroups of them.
	KLo, KHi int64
	// Whens and Thens are the CASE arms; Else is the ELSE value.
	Whens []Expr
	Thens []any
	Else  any
	// Field is a DateBucket's date_trunc unit or EXTRACT field, Trunc
	// says which, and Type is the column's type (date or timestamp).
	Field string
	Trunc bool
	Type  schema.Type
	// Shift moves a DateBucket's column by a fixed interval before the
	// function applies, in microseconds (whole days for a date column);
	// the key's values are computed over the bounds moved by it.
	Shift int64
	// Fn is a TextBucket's function.
	Fn *TextFn
	// Num is a RangeBucket's expression.
	Num Scalar
}

// Values lists every value the key can take, in order.
//
// Every bound was checked when the query was parsed (parser.bucket): the
// loops below run at most MaxGroups times.
func (b *Bucket) Values(t *Table) []any {
	switch b.Kind {
	case WidthBucket:
		out := make([]any, 0, b.N+2)
		for i := int64(0); i <= b.N+1; i++ {
			out = append(out, i)
		}
		return out
	case RangeBucket:
		out := make([]any, 0, b.KHi-b.KLo+1)
		for k := b.KLo; k <= b.KHi; k++ {
			out = append(out, k)
		}
		return out
	case FloorBucket:
		// The bin count was computed in integers when the query was
		// parsed, so this loop is bounded before it starts.
		out := make([]any, 0, b.KHi-b.KLo+1)
		for k := b.KLo; k <= b.KHi; k++ {
			out = append(out, canonicalFloat(float64(k)*b.Width))
		}
		return out
	case DateBucket:
		return b.dateValues(t)
	case TextBucket:
		vals, ok := b.Fn.image(t)
		if !ok {
			return nil
		}
		return vals
	}
	var out []any
	for _, v := range append(append([]any{}, b.Thens...), b.Else) {
		if v == nil {
			continue // no ELSE: NULL is no group
		}
		dup := false
		for _, w := range out {
			dup = dup || KeyID([]any{w}) == KeyID([]any{v})
		}
		if !dup {
			out = append(out, CanonicalValue(v))
		}
	}
	return out
}

// bucketKind is the type family of a computed key's values.
func (b *Bucket) ValueKind() string {
	if b.Kind == DateBucket && b.Trunc {
		return string(b.Type)
	}
	if b.Kind == TextBucket {
		return b.Fn.ValueKind()
	}
	if b.Kind != CaseBucket {
		return "number"
	}
	v := b.Else
	if v == nil && len(b.Thens) > 0 {
		v = b.Thens[0]
	}
	switch v.(type) {
	case string:
		return "text"
	case bool:
		return "bool"
	}
	return "number"
}

// maxBinNumber bounds the bin numbers floor(bound / w) of a FloorBucket:
// below 2^52, consecutive whole numbers are exact doubles and k·w moves
// with k.
const maxBinNumber = 1 << 52

// NewFloorBucket checks floor(col / w) * w over the column's declared bounds
// and counts its bins in integer arithmetic, before anything loops over
// them: a width so small that a bound divided by it overflows, is NaN, or
// reaches 2^52 is refused, as is a bin count above MaxGroups.
func NewFloorBucket(col *Column, w float64) (*Bucket, error) {
	lo, hi := *col.Lower, *col.Upper
	// The widest bins that stay within MaxGroups, for the message.
	minWidth := (hi - lo) / (MaxGroups - 1)
	tooMany := func(bins string) error {
		return Refuse("floor(%s / %g) * %g gives %s bins over the declared range [%g, %g]; want at most %d: a width of at least %.3g",
			col.Name, w, w, bins, lo, hi, MaxGroups, minWidth)
	}
	kLo, kHi := math.Floor(lo/w), math.Floor(hi/w)
	if math.IsNaN(kLo) || math.IsNaN(kHi) || math.Abs(kLo) >= maxBinNumber || math.Abs(kHi) >= maxBinNumber {
		return nil, tooMany("too many")
	}
	b := &Bucket{Kind: FloorBucket, Column: col.Name, Width: w, KLo: int64(kLo), KHi: int64(kHi)}
	if n := b.KHi - b.KLo + 1; n > MaxGroups {
		return nil, tooMany(strconv.FormatInt(n, 10))
	}
	// Distinct bins must have distinct values k·w, or two groups would
	// share a key.
	prev := math.Inf(-1)
	for k := b.KLo; k <= b.KHi; k++ {
		v := float64(k) * w
		if !(v > prev) {
			return nil, Refuse("floor(%s / %g) * %g: the width is too small for its bins to be told apart over the declared range [%g, %g]; want a width of at least %.3g",
				col.Name, w, w, lo, hi, math.Max(minWidth, math.Abs(math.Max(math.Abs(lo), math.Abs(hi)))*0x1p-40))
		}
		prev = v
	}
	return b, nil
}

// String spells the computed key as SQL, for messages.
func (b *Bucket) String() string {
	switch b.Kind {
	case WidthBucket:
		return fmt.Sprintf("width_bucket(%s, %g, %g, %d)", b.Column, b.Lo, b.Hi, b.N)
	case FloorBucket:
		return fmt.Sprintf("floor(%s / %g) * %g", b.Column, b.Width, b.Width)
	case DateBucket:
		return DateString(b.Field, b.Column, b.Trunc, b.Shift)
	case TextBucket:
		return b.Fn.String()
	case RangeBucket:
		return ScalarString(b.Num)
	}
	return "CASE … END"
}

// KeyNames spells the GROUP BY keys for messages: columns by name,
// computed keys as their expressions.
func (q *Query) KeyNames() string {
	names := make([]string, len(q.GroupBy))
	for i, g := range q.GroupBy {
		names[i] = g
		if b := q.Buckets[g]; b != nil {
			names[i] = b.String()
		}
	}
	return strings.Join(names, ", ")
}
