package query

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// batchReader feeds the rows of Arrow record batches (the unit, the keys,
// then the values: sqlgen.StreamRows) to a boundPass, reusing its
// buffers from batch to batch.
type batchReader struct {
	units []int64
	gids  []int32
	ints  [][]int64
}

// read feeds rec's rows to b: errUnordered when the unit goes back,
// errNotStreamable for a column type it cannot read.
func (r *batchReader) read(rec arrow.RecordBatch, b *boundPass, keys *keyDicts, valueCols []int) error {
	n := int(rec.NumRows())
	var err error
	if r.units, err = intColumn(rec.Column(0), r.units[:0]); err != nil {
		return err
	}
	if rec.Column(0).NullN() > 0 {
		return errNotStreamable // the statement reads no NULL unit
	}
	if r.gids, err = keys.ids(rec, n, r.gids[:0]); err != nil {
		return err
	}
	nv := len(valueCols)
	type valueCol struct {
		arr   arrow.Array
		f     []float64
		i     []int64
		nulls bool
	}
	vals := make([]valueCol, nv)
	if len(r.ints) < nv {
		r.ints = make([][]int64, nv)
	}
	for c, col := range valueCols {
		a := rec.Column(col)
		vals[c] = valueCol{arr: a, nulls: a.NullN() > 0}
		if f, ok := a.(*array.Float64); ok {
			vals[c].f = f.Float64Values()
		} else if r.ints[c], err = intColumn(a, r.ints[c][:0]); err != nil {
			return err
		} else {
			vals[c].i = r.ints[c]
		}
	}
	for i := range n {
		if err := b.start(r.units[i]); err != nil {
			return err
		}
		p := b.pair(r.gids[i])
		b.pairN[p]++
		if nv == 0 {
			continue
		}
		k := b.rowKey()
		for c := range vals {
			v := &vals[c]
			if v.nulls && v.arr.IsNull(i) {
				continue
			}
			if v.f != nil {
				b.addFloat(p, c, k, v.f[i])
			} else {
				b.addInt(p, c, k, v.i[i])
			}
		}
	}
	return nil
}

// intColumn appends a's values as int64 to buf (NULLs read as 0).
func intColumn(a arrow.Array, buf []int64) ([]int64, error) {
	switch x := a.(type) {
	case *array.Int64:
		return append(buf, x.Int64Values()...), nil
	case *array.Int32:
		for _, v := range x.Int32Values() {
			buf = append(buf, int64(v))
		}
	case *array.Int16:
		for _, v := range x.Int16Values() {
			buf = append(buf, int64(v))
		}
	case *array.Int8:
		for _, v := range x.Int8Values() {
			buf = append(buf, int64(v))
		}
	default:
		return nil, errNotStreamable
	}
	return buf, nil
}

// denseKeys is the width of the array that maps small non-negative integer
// keys to their group without a map.
const denseKeys = 1 << 12

// keyDicts numbers the groups of one range as their keys come: each key
// column maps its values to local numbers, and a tuple of local numbers
// to a group.
type keyDicts struct {
	cols   []keyDict
	tuples map[[maxStreamKeys]int32]int32
	keys   [][]any // each group's key values
}

// keyDict numbers the values of one key column.
type keyDict struct {
	dense  []int32 // small integers: number + 1, 0 when not seen
	ints   map[int64]int32
	strs   map[string]int32
	bools  [2]int32
	null   int32
	values []any
}

func newKeyDicts(nk int) *keyDicts {
	d := &keyDicts{cols: make([]keyDict, nk)}
	for i := range d.cols {
		d.cols[i] = keyDict{ints: map[int64]int32{}, strs: map[string]int32{}, bools: [2]int32{-1, -1}, null: -1}
	}
	if nk > 1 {
		d.tuples = map[[maxStreamKeys]int32]int32{}
	}
	if nk == 0 {
		d.keys = [][]any{{}}
	}
	return d
}

// values are group g's key values.
func (d *keyDicts) values(g int) []any { return d.keys[g] }

// ids appends the group of each of rec's n rows to buf (keys in columns
// 1 … nk).
func (d *keyDicts) ids(rec arrow.RecordBatch, n int, buf []int32) ([]int32, error) {
	nk := len(d.cols)
	if nk == 0 {
		for range n {
			buf = append(buf, 0)
		}
		return buf, nil
	}
	if nk == 1 {
		buf, err := d.cols[0].number(rec.Column(1), n, buf)
		if err != nil {
			return nil, err
		}
		for len(d.keys) < len(d.cols[0].values) {
			d.keys = append(d.keys, []any{d.cols[0].values[len(d.keys)]})
		}
		return buf, nil
	}
	local := make([][]int32, nk)
	for j := range d.cols {
		var err error
		if local[j], err = d.cols[j].number(rec.Column(1+j), n, nil); err != nil {
			return nil, err
		}
	}
	for i := range n {
		var t [maxStreamKeys]int32
		for j := range nk {
			t[j] = local[j][i]
		}
		g, ok := d.tuples[t]
		if !ok {
			g = int32(len(d.keys))
			d.tuples[t] = g
			key := make([]any, nk)
			for j := range nk {
				key[j] = d.cols[j].values[t[j]]
			}
			d.keys = append(d.keys, key)
		}
		buf = append(buf, g)
	}
	return buf, nil
}

// number appends the local number of each of a's n values to buf.
func (k *keyDict) number(a arrow.Array, n int, buf []int32) ([]int32, error) {
	nulls := a.NullN() > 0
	add := func(v any) int32 {
		k.values = append(k.values, v)
		return int32(len(k.values) - 1)
	}
	switch x := a.(type) {
	case *array.Int64, *array.Int32, *array.Int16, *array.Int8:
		vals, err := intColumn(a, nil)
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if nulls && a.IsNull(i) {
				buf = append(buf, k.nullID(add))
				continue
			}
			if v >= 0 && v < denseKeys {
				if k.dense == nil {
					k.dense = make([]int32, denseKeys)
				}
				if id := k.dense[v]; id > 0 {
					buf = append(buf, id-1)
					continue
				}
			}
			id, ok := k.ints[v]
			if !ok {
				id = add(v)
				k.ints[v] = id
				if v >= 0 && v < denseKeys {
					k.dense[v] = id + 1
				}
			}
			buf = append(buf, id)
		}
	case *array.String:
		for i := range n {
			if nulls && a.IsNull(i) {
				buf = append(buf, k.nullID(add))
				continue
			}
			s := x.Value(i) // in the batch's memory: copied before kept
			id, ok := k.strs[s]
			if !ok {
				s = strings.Clone(s)
				id = add(s)
				k.strs[s] = id
			}
			buf = append(buf, id)
		}
	case *array.Boolean:
		for i := range n {
			if nulls && a.IsNull(i) {
				buf = append(buf, k.nullID(add))
				continue
			}
			v := 0
			if x.Value(i) {
				v = 1
			}
			if k.bools[v] < 0 {
				k.bools[v] = add(v == 1)
			}
			buf = append(buf, k.bools[v])
		}
	default:
		return nil, errNotStreamable
	}
	return buf, nil
}

// nullID is the local number of the NULL key.
func (k *keyDict) nullID(add func(any) int32) int32 {
	if k.null < 0 {
		k.null = add(nil)
	}
	return k.null
}
