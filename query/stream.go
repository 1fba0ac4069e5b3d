package query

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/sqlgen"
	"github.com/dpstat/dpstat/random"
	"github.com/dpstat/dpstat/schema"
)

// BatchStreamer is implemented by engines that can hand a statement's
// result over as Apache Arrow record batches, in the result's order (the
// embedded DuckDB engine built with the duckdb_arrow tag). On such an
// engine a bounded query over a table declared clustered_by_unit bounds
// each person's contribution in Go while it reads the rows (the streaming
// form, streamRanges).
type BatchStreamer interface {
	StreamBatches(ctx context.Context, sql string, fn func(arrow.RecordBatch) error) error
}

// streamSpan is how many consecutive ranges of the unit (sqlgen.UnitRanges)
// one streaming statement reads. Each statement costs a fixed time that
// grows with the file (the engine considers every row group of the file
// against the range's filter: about 20 µs per row group), and its result
// is held by the engine until it is read (about 25 bytes a row): a span
// of a few ranges cuts the statements of a large table by as much, for a
// few tens of megabytes more. A span found out of order is read again
// range by range with SQL.
const streamSpan = 4

// maxStreamKeys caps the GROUP BY columns of the streaming form.
const maxStreamKeys = 4

// streamable reports whether plan p runs in the streaming form when its
// engine can stream (BatchStreamer): a bounded plan read in ranges of its
// unit (sqlgen.UnitRanges: a table declared clustered_by_unit, read alone,
// with public keys), without epochs, whose statistics are counts of rows,
// of values or of persons, and sums (COUNT, SUM, AVG, VARIANCE over
// public keys; a COUNT of an int or float column), keeping at most 2
// values per (person, group) when it reads values (the one-pass form's
// bound). The choice depends on the declarations and the plan only.
func streamable(p *Prepared) bool {
	pl := p.Plan
	if len(p.ranges) == 0 || !pl.Bounded || pl.Epochs != nil || len(pl.Query.GroupBy) > maxStreamKeys || len(pl.Statistics) == 0 {
		return false
	}
	if pl.SamplesValues() && (pl.Contribution.RowsPerGroup < 1 || pl.Contribution.RowsPerGroup > 2) {
		return false
	}
	if pl.Contribution.RowsPerGroup < 1 || (pl.BoundGroups && (pl.Contribution.Groups < 1 || pl.Contribution.Groups > 1<<20)) {
		return false
	}
	for _, st := range pl.Statistics {
		switch st.Summand.Kind {
		case dpplan.RowCount, dpplan.DistinctUnits, dpplan.FixedPointSum, dpplan.CentredSquareSum:
		case dpplan.NonNullCount:
			// The values counted are read as they are: the reader takes
			// integers and doubles (a sum's are clamped numbers always).
			c := pl.Table.Column(st.Summand.Column)
			if c == nil || (c.Type != schema.Int && c.Type != schema.Float) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// errNotStreamable reports a result schema the streaming form does not
// read (a key or value type it has no reader for: a property of the plan's
// statement, not of the data), or a NULL unit, which the statement's
// filter excludes. The range then runs its SQL statement.
var errNotStreamable = errors.New("the statement's columns cannot be streamed")

// streamRanges runs p in form f in the streaming form, when p is
// streamable and the engine a BatchStreamer (false otherwise): for each
// span of consecutive ranges of the unit (streamSpan), the engine reads
// the table's rows of that span (filtered, keyed and clamped as the SQL
// forms' row stage does: sqlgen.RowsSQL) and a boundPass bounds them
// person by person. Its rows are one per group of each span, whose sums
// add up as the ranged SQL form's do.
//
// The declaration is not trusted: a span whose rows come back with a
// unit below the previous one (a person's rows not contiguous, or the
// table not in the order of its unit) is discarded and its ranges run
// again with their SQL statements, with fresh randomness. Whether that
// happens depends on the data's order only, never on the random choices,
// so the answer has the SQL form's distribution either way; only the time
// differs, and only once: the table is remembered as out of order
// (Service.unordered) and its later queries run the SQL form at once. A
// span whose columns cannot be streamed (a property of the plan) ends
// the streaming of the query's other ranges too.
func (s *Service) streamRanges(ctx context.Context, p *Prepared, f dpplan.Form, table string) (*engine.Rows, bool, error) {
	bs, ok := s.eng.(BatchStreamer)
	s.mu.Lock()
	unordered := s.unordered[table]
	s.mu.Unlock()
	if !ok || unordered || !streamable(p) {
		return nil, false, nil
	}
	src := p.Opts.Source
	if src == nil {
		src = random.Shared{}
	}
	pl := p.Plan
	nk := len(pl.Query.GroupBy)
	out := &engine.Rows{}
	for i := range nk {
		out.Columns = append(out.Columns, sqlgen.KeyColumn(i))
	}
	for i := range pl.Statistics {
		out.Columns = append(out.Columns, sqlgen.StatColumn(i))
	}
	// stream turns false for the rest of the query once a span cannot be
	// streamed: the statement's columns are the same in every range, and
	// a table out of order is read with SQL from then on.
	stream := true
	for i := 0; i < len(p.ranges); {
		j := min(i+streamSpan, len(p.ranges))
		if stream {
			span := sqlgen.UnitRange{Lo: p.ranges[i].Lo, Hi: p.ranges[j-1].Hi}
			rs, err := sqlgen.RowsSQL(pl, p.dialect, f, span)
			if err != nil {
				return nil, true, err
			}
			var seed [32]byte
			for k := range 4 {
				binary.LittleEndian.PutUint64(seed[8*k:], src.Uint64())
			}
			rows, err := streamRange(ctx, bs, pl, rs, seed)
			reread := errors.Is(err, errUnordered) || errors.Is(err, errNotStreamable)
			if obs := streamObserved.Load(); obs != nil {
				(*obs)(!reread)
			}
			if errors.Is(err, errUnordered) {
				s.mu.Lock()
				if s.unordered == nil {
					s.unordered = map[string]bool{}
				}
				s.unordered[table] = true
				s.mu.Unlock()
			}
			switch {
			case err == nil:
				out.Rows = append(out.Rows, rows...)
				i = j
				continue
			case !reread:
				if ctx.Err() != nil {
					return nil, true, ctx.Err()
				}
				return nil, true, fmt.Errorf("engine error on table %s: %w", table, err)
			}
			stream = false
		}
		// The span's ranges are read with their SQL statements.
		for _, r := range p.ranges[i:j] {
			sqlRows, err := s.rangeRows(ctx, p, f, r, table)
			if err != nil {
				return nil, true, err
			}
			out.Rows = append(out.Rows, sqlRows.Rows...)
		}
		i = j
	}
	return out, true, nil
}

// streamObserved, when set (by tests), is told for each span whether
// the streaming form answered it (false: its ranges read again with SQL).
var streamObserved atomic.Pointer[func(streamed bool)]

// streamNote says, for EXPLAIN, that p's ranges stream on s's engine; ""
// when they do not.
func (s *Service) streamNote(p *Prepared) string {
	if _, ok := s.eng.(BatchStreamer); !ok || !streamable(p) {
		return ""
	}
	return fmt.Sprintf("the rows of each span of up to %d ranges are streamed to dpstat in the order of %s and bounded person by person (a span found out of that order runs its ranges' SQL statements instead)", streamSpan, p.Plan.Table.PrivacyUnit)
}

// streamRange reads one range's rows (rs) and bounds them: the rows of
// the range's groups, keys then statistics.
func streamRange(ctx context.Context, bs BatchStreamer, pl *dpplan.Plan, rs *sqlgen.StreamRows, seed [32]byte) ([][]any, error) {
	nk := len(pl.Query.GroupBy)
	// The value columns, each once (a count of values shares its sum's).
	colOf := map[int]int{}
	var valueCols []int
	stats := make([]passStat, len(pl.Statistics))
	for i, st := range pl.Statistics {
		switch st.Summand.Kind {
		case dpplan.RowCount:
			stats[i].kind = passRows
		case dpplan.DistinctUnits:
			stats[i].kind = passUnits
		case dpplan.NonNullCount:
			stats[i].kind = passCount
		default:
			stats[i].kind = passSum
		}
		if stats[i].kind == passCount || stats[i].kind == passSum {
			c := rs.Value[i]
			if c < 0 {
				return nil, errNotStreamable
			}
			if _, ok := colOf[c]; !ok {
				colOf[c] = len(valueCols)
				valueCols = append(valueCols, c)
			}
			stats[i].col = colOf[c]
		}
	}
	var b *boundPass
	keys := newKeyDicts(nk)
	rd := &batchReader{}
	err := bs.StreamBatches(ctx, rs.SQL, func(rec arrow.RecordBatch) error {
		if b == nil {
			isInt, err := valueTypes(rec.Schema(), valueCols)
			if err != nil {
				return err
			}
			b = newBoundPass(seed, pl.Contribution.RowsPerGroup, boundGroups(pl), stats, isInt)
		}
		return rd.read(rec, b, keys, valueCols)
	})
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, nil // no rows
	}
	b.finish()
	var rows [][]any
	for g, ok := range b.seen {
		if !ok {
			continue
		}
		row := append(make([]any, 0, nk+len(stats)), keys.values(g)...)
		for s := range stats {
			row = append(row, b.value(g, s))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// boundGroups is L0 for a boundPass: 0 when the plan keeps every group.
func boundGroups(pl *dpplan.Plan) int {
	if !pl.BoundGroups {
		return 0
	}
	return int(pl.Contribution.Groups)
}

// valueTypes says, for each value column, whether it holds integers
// (else doubles); any other type is errNotStreamable.
func valueTypes(sc *arrow.Schema, cols []int) ([]bool, error) {
	out := make([]bool, len(cols))
	for i, c := range cols {
		if c >= sc.NumFields() {
			return nil, errNotStreamable
		}
		switch sc.Field(c).Type.ID() {
		case arrow.FLOAT64:
		case arrow.INT64, arrow.INT32, arrow.INT16, arrow.INT8:
			out[i] = true
		default:
			return nil, errNotStreamable
		}
	}
	return out, nil
}
