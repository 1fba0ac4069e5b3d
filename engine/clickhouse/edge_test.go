package clickhouse_test

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/clickhouse"
	"github.com/dpstat/dpstat/query/enginetest"
)

// TestKeptExactSumExtremes: the exact sum of a kept list splits each value
// into 32-bit halves that add up to it, negative values and the int64
// extremes included (intDiv and modulo truncate toward zero in ClickHouse).
func TestKeptExactSumExtremes(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	eng := open(t, c, 0)
	sb := clickhouse.Dialect.(engine.ShardBounder)
	for _, vals := range [][]int64{{-1}, {-1, -1, 5}, {math.MinInt64}, {math.MaxInt64}, {math.MinInt64, math.MaxInt64, -4294967296, -4294967297, 4294967295}} {
		want := new(big.Int)
		list := "["
		for i, v := range vals {
			want.Add(want, big.NewInt(v))
			if i > 0 {
				list += ", "
			}
			list += fmt.Sprintf("tuple(toUInt64(%d), toNullable(toInt64(%d)))", i, v)
		}
		list += "]"
		sql := "SELECT " + sb.KeptExactSum("l", 1) + " FROM (SELECT " + list + " AS l)"
		rows, err := eng.Query(context.Background(), sql)
		if err != nil {
			t.Fatalf("%v: %v\n%s", vals, err, sql)
		}
		got, ok := rows.Rows[0][0].(*big.Int)
		if !ok || got.Cmp(want) != 0 {
			t.Errorf("%v: sum %v, want %v", vals, rows.Rows[0][0], want)
		}
	}
}
