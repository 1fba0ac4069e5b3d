package main

// The 10M-row benchmark table (-table events): COUNT, SUM and AVG by the
// public key grp, each row a person (the whole table, 1,000 persons and 12
// persons) and with per-person bounding (L0 = 3, L∞ = 2; the whole table and
// 10,000 persons); key selection by w on the whole table and on about 2,000
// rows (keys of 7 to 29 rows, near the threshold); MEDIAN(v) by grp on
// groups of 1M, 100 and 12 persons.
//
// dpstat plans each query once, reads its exact statistics from the engine
// once (with a privacy unit, -draws times: each read draws the random
// bounding afresh) and releases them with fresh noise in every run. Google's
// aggregations are built once from the rows (bounded in Go, as a program
// using the library must), serialized with the library's GobEncode, and
// every run releases a fresh copy (GobDecode) with fresh noise: the
// library's own way of carrying an aggregation's state, so that both sides
// pay for the data once and for the noise per run. Errors are measured
// against each side's own bounded statistics, which is what the noise is
// added to and what the intervals claim to cover; the bounding's own effect
// is printed apart.

import (
	"context"
	"fmt"
	"log"
	"math"
	"math/big"
	"runtime"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/differential-privacy/go/v3/dpagg"
	gnoise "github.com/google/differential-privacy/go/v3/noise"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/bench/benchdata"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// The benchmark table (internal/benchdata): row i belongs to person
// pid = i/10, grp in 0..9 (public), v in [0, 100) (declared [0, 100]),
// w in 0..119 (no public list). Declared twice: rows_as_people (each row a
// person) and events (privacy unit pid, L0 = 3, L∞ = 2).
const (
	vLower, vUpper = 0, 100
	eventsL0       = 3
	eventsLinf     = 2
)

// event is one row of the benchmark table.
type event struct {
	pid    int64
	grp, w int64
	v      float64
}

// readEvents reads every row of the Parquet file pq.
func readEvents(pq string) ([]event, error) {
	rdr, err := file.OpenParquetFile(pq, true)
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(context.Background(), []int{0, 1, 2, 3}, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var out []event
	for rr.Next() {
		rec := rr.RecordBatch()
		pid := rec.Column(0).(*array.Int64).Int64Values()
		grp := rec.Column(1).(*array.Int64).Int64Values()
		v := rec.Column(2).(*array.Float64).Float64Values()
		w := rec.Column(3).(*array.Int64).Int64Values()
		for i := range pid {
			out = append(out, event{pid: pid[i], grp: grp[i], v: v[i], w: w[i]})
		}
	}
	return out, rr.Err()
}

// runEvents measures the 10M-row benchmark table: the table is generated
// (or reused) in dir, read once into memory for Google's side and for the
// true values.
func runEvents(ctx context.Context, runs, draws int, eps, delta float64, dir string, rows int) {
	eng, err := duckdb.Open(duckdb.Options{Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	pq, err := benchdata.Events(ctx, eng, dir, rows)
	if err != nil {
		log.Fatal(err)
	}
	cat, err := benchdata.Catalog(pq, "catalog-accuracy.yaml", "{epsilon: 1e9}", 119, rows)
	if err != nil {
		log.Fatal(err)
	}
	if err := query.Register(ctx, cat, eng); err != nil {
		log.Fatal(err)
	}
	evs, err := readEvents(pq)
	if err != nil {
		log.Fatal(err)
	}
	b := &bench{ctx: ctx, cat: cat, eng: eng, runs: runs, eps: eps, delta: delta}
	fmt.Printf("machine: %d cores; benchmark table, %d rows, %d persons; ε = %g, δ = %g; %d runs per side\n\n",
		runtime.NumCPU(), len(evs), len(evs)/10, eps, delta, runs)
	people := func(keep func(e *event) bool) []event {
		var out []event
		for i := range evs {
			if keep(&evs[i]) {
				out = append(out, evs[i])
			}
		}
		return out
	}
	all := func(*event) bool { return true }
	for _, c := range []struct {
		where string
		keep  func(*event) bool
	}{
		{"", all},
		{"pid < 1000", func(e *event) bool { return e.pid < 1000 }},
		{"pid < 12", func(e *event) bool { return e.pid < 12 }},
	} {
		b.eventsCountSumAvg("rows_as_people", c.where, people(c.keep), 1, 1, 1)
	}
	for _, c := range []struct {
		where string
		keep  func(*event) bool
	}{
		{"", all},
		{"pid < 10000", func(e *event) bool { return e.pid < 10000 }},
	} {
		b.eventsCountSumAvg("events", c.where, people(c.keep), eventsL0, eventsLinf, draws)
	}
	b.eventsKeys("", evs)
	b.eventsKeys("v < 0.02", people(func(e *event) bool { return e.v < 0.02 }))
	b.eventsMedian("", evs)
	b.eventsMedian("pid < 100", people(func(e *event) bool { return e.pid < 100 }))
	b.eventsMedian("pid < 12", people(func(e *event) bool { return e.pid < 12 }))
}

// prepare plans sql and reads its exact statistics (and histograms) once.
func (b *bench) prepare(sql string, delta float64) (*query.Prepared, *dpplan.Exact) {
	opts := query.Options{Epsilon: b.eps, Delta: delta, Confidence: 0.95, Analyst: "bench"}
	p, err := query.Prepare(b.cat, duckdb.Dialect, sql, opts)
	if err != nil {
		log.Fatalf("%s: %v", sql, err)
	}
	return p, b.readExact(p)
}

// readExact runs p's engine statements: for a table with a privacy unit,
// each call draws the contribution bounding afresh.
func (b *bench) readExact(p *query.Prepared) *dpplan.Exact {
	sql := p.Plan.Query
	var ex *dpplan.Exact
	if p.SQL != "" {
		text, err := p.FormSQL(dpplan.IntegerForm)
		if err != nil {
			log.Fatal(err)
		}
		rows, err := b.eng.Query(b.ctx, text)
		if err != nil {
			log.Fatalf("%v: %v", sql, err)
		}
		if ex, err = p.Plan.ReadExactForm(rows, dpplan.IntegerForm); err != nil {
			log.Fatal(err)
		}
	} else {
		// Quantiles alone: their histograms have their own statements.
		var err error
		rows := &engine.Rows{Columns: make([]string, len(p.Plan.Query.GroupBy)+len(p.Plan.Statistics))}
		if ex, err = p.Plan.ReadExactForm(rows, dpplan.CleanForm); err != nil {
			log.Fatal(err)
		}
	}
	for h, hs := range p.HistogramSQL {
		rows, err := b.eng.Query(b.ctx, hs)
		if err != nil {
			log.Fatal(err)
		}
		if err := p.Plan.ReadHistogram(ex, h, rows); err != nil {
			log.Fatal(err)
		}
	}
	return ex
}

// exactValues returns, for every group of ex (in Plan.Keys order), the exact
// value of each aggregate of a COUNT/SUM/AVG plan after the bounding stage:
// what the noise is added to.
func exactValues(p *dpplan.Plan, ex *dpplan.Exact) [][]float64 {
	out := make([][]float64, len(ex.Stats))
	val := func(g, stat int) float64 {
		s := p.Statistics[stat].Summand
		f, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(ex.Stats[g][stat]), s.Exp).Float64()
		return f
	}
	for g := range ex.Stats {
		for _, a := range p.Aggregates {
			r := p.Releases[a.Releases[0]]
			switch a.Aggregate.Func {
			case ir.Avg:
				out[g] = append(out[g], val(g, r.Stat)/val(g, r.CountStat))
			default:
				out[g] = append(out[g], val(g, r.Stat))
			}
		}
	}
	return out
}

// gobClone returns a fresh copy of a Google aggregation from its
// serialization: the library's own way of moving an aggregation's state
// (for distributed aggregation), so that each run releases the same
// aggregated rows with fresh noise.
func gobClone[T any, PT interface {
	*T
	GobDecode([]byte) error
}](data []byte) PT {
	x := PT(new(T))
	if err := x.GobDecode(data); err != nil {
		log.Fatal(err)
	}
	return x
}

func mustGob(x interface{ GobEncode() ([]byte, error) }) []byte {
	data, err := x.GobEncode()
	if err != nil {
		log.Fatal(err)
	}
	return data
}

// boundedGoogle keeps, as a program using Google's library must do itself,
// the first linf rows per (person, group) and the first l0 groups per
// person, in file order (rows are sorted by person).
func boundedGoogle(rows []event, l0, linf int) []event {
	if l0 == 1 && linf == 1 {
		return rows
	}
	var out []event
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].pid == rows[i].pid {
			j++
		}
		var groups []int64
		per := map[int64]int{}
		for _, e := range rows[i:j] {
			if _, ok := per[e.grp]; !ok {
				if len(groups) == l0 {
					continue
				}
				groups = append(groups, e.grp)
			}
			if per[e.grp] < linf {
				per[e.grp]++
				out = append(out, e)
			}
		}
		i = j
	}
	return out
}

// groupTruth is one group's true (unbounded) and bounded statistics.
type groupTruth struct {
	n, sum float64
	vs     []float64
}

func truthByGroup(rows []event, key func(*event) int64) map[int64]*groupTruth {
	t := map[int64]*groupTruth{}
	for i := range rows {
		k := key(&rows[i])
		g := t[k]
		if g == nil {
			g = &groupTruth{}
			t[k] = g
		}
		g.n++
		g.sum += rows[i].v
		g.vs = append(g.vs, rows[i].v)
	}
	return t
}

func where(sql, cond string) string {
	if cond == "" {
		return sql
	}
	return sql + " WHERE " + cond
}

// eventsCountSumAvg answers COUNT(*), SUM(v), AVG(v) by grp on table (ε
// split in three) on both sides. Errors are measured against each side's
// own bounded statistics (what its noise is added to; with one row per
// person, the true values); the bounding's own effect is reported apart.
// With a privacy unit dpstat's bounding is random: draws engine reads,
// runs/draws releases each.
func (b *bench) eventsCountSumAvg(table, cond string, rows []event, l0, linf, draws int) {
	sql := where("SELECT grp, COUNT(*), SUM(v), AVG(v) FROM "+table, cond) + " GROUP BY grp"
	truth := truthByGroup(rows, func(e *event) int64 { return e.grp })
	grps := make([]int64, 0, len(truth))
	for g := range truth {
		grps = append(grps, g)
	}
	sort.Slice(grps, func(i, j int) bool { return grps[i] < grps[j] })
	fmt.Printf("## %s (ε = %g split in three; v in [%d, %d]; L0 = %d, L∞ = %d)\n\n", sql, b.eps, vLower, vUpper, l0, linf)
	type accs struct{ count, sum, avg acc }
	dA, gA := map[int64]*accs{}, map[int64]*accs{}
	dB, gB := map[int64]*[3]float64{}, map[int64]*[3]float64{} // bounded values, summed over draws
	for _, g := range grps {
		dA[g], gA[g], dB[g], gB[g] = &accs{}, &accs{}, &[3]float64{}, &[3]float64{}
	}
	opts := query.Options{Epsilon: b.eps, Confidence: 0.95, Analyst: "bench"}
	p, err := query.Prepare(b.cat, duckdb.Dialect, sql, opts)
	if err != nil {
		log.Fatalf("%s: %v", sql, err)
	}
	draws = max(1, min(draws, b.runs))
	for d := range draws {
		ex := b.readExact(p)
		exact := exactValues(p.Plan, ex)
		index := map[int64]int{}
		for i, k := range p.Plan.Released() {
			index[k[0].(int64)] = i
		}
		for _, g := range grps {
			for s := range 3 {
				dB[g][s] += exact[index[g]][s] / float64(draws)
			}
		}
		n := b.runs / draws
		if d < b.runs%draws {
			n++
		}
		for range n {
			res, err := p.Release(ex)
			if err != nil {
				log.Fatal(err)
			}
			for i, r := range res.Rows {
				k := r[0].(int64)
				a, e := dA[k], exact[index[k]]
				if a == nil {
					continue
				}
				ci := res.CI[i]
				a.count.addCI(float64(r[1].(int64))-e[0], ci[1].Low, ci[1].High, e[0])
				a.sum.addCI(r[2].(float64)-e[1], ci[2].Low, ci[2].High, e[1])
				a.avg.addCI(r[3].(float64)-e[2], ci[3].Low, ci[3].High, e[2])
			}
		}
	}
	// Google: bounded in Go, aggregated once per group, serialized, and
	// released runs times from fresh copies.
	kept := truthByGroup(boundedGoogle(rows, l0, linf), func(e *event) int64 { return e.grp })
	share := b.eps / 3
	type enc struct{ c, s, m []byte }
	encs := map[int64]enc{}
	for _, g := range grps {
		c, err := dpagg.NewCount(&dpagg.CountOptions{Epsilon: share, MaxPartitionsContributed: int64(l0 * linf), Noise: gnoise.Laplace()})
		if err != nil {
			log.Fatal(err)
		}
		s, err := dpagg.NewBoundedSumFloat64(&dpagg.BoundedSumFloat64Options{Epsilon: share, MaxPartitionsContributed: int64(l0 * linf), Lower: vLower, Upper: vUpper, Noise: gnoise.Laplace()})
		if err != nil {
			log.Fatal(err)
		}
		m, err := dpagg.NewBoundedMean(&dpagg.BoundedMeanOptions{Epsilon: share, MaxPartitionsContributed: int64(l0), MaxContributionsPerPartition: int64(linf), Lower: vLower, Upper: vUpper, Noise: gnoise.Laplace()})
		if err != nil {
			log.Fatal(err)
		}
		if k := kept[g]; k != nil {
			for _, v := range k.vs {
				c.Increment()
				s.Add(v)
				m.Add(v)
			}
			gB[g] = &[3]float64{k.n, k.sum, k.sum / k.n}
		}
		encs[g] = enc{mustGob(c), mustGob(s), mustGob(m)}
	}
	for range b.runs {
		for _, g := range grps {
			e, a, t := encs[g], gA[g], gB[g]
			c := gobClone[dpagg.Count](e.c)
			s := gobClone[dpagg.BoundedSumFloat64](e.s)
			m := gobClone[dpagg.BoundedMean](e.m)
			cv, err := c.Result()
			if err != nil {
				log.Fatal(err)
			}
			sv, err := s.Result()
			if err != nil {
				log.Fatal(err)
			}
			mv, err := m.Result()
			if err != nil {
				log.Fatal(err)
			}
			cci, _ := c.ComputeConfidenceInterval(0.05)
			sci, _ := s.ComputeConfidenceInterval(0.05)
			mci, _ := m.ComputeConfidenceInterval(0.05)
			a.count.addCI(float64(cv)-t[0], float64(cci.LowerBound), float64(cci.UpperBound), t[0])
			a.sum.addCI(sv-t[1], sci.LowerBound, sci.UpperBound, t[1])
			a.avg.addCI(mv-t[2], mci.LowerBound, mci.UpperBound, t[2])
		}
	}
	if l0*linf > 1 {
		fmt.Printf("dpstat's bounding is random (%d draws of the engine statement, %d releases in all); Google's keeps the first rows in file order. Bounded values, mean over draws, against the true ones:\n\n", draws, b.runs)
		fmt.Printf("| grp | rows | COUNT true / dpstat bounded / Google bounded | SUM true / dpstat / Google | AVG true / dpstat / Google |\n|---|---:|---|---|---|\n")
		for _, g := range grps {
			t := truth[g]
			fmt.Printf("| %d | %.0f | %.0f / %.0f / %.0f | %.6g / %.6g / %.6g | %.4f / %.4f / %.4f |\n", g, t.n,
				t.n, dB[g][0], gB[g][0], t.sum, dB[g][1], gB[g][1], t.sum/t.n, dB[g][2], gB[g][2])
		}
		fmt.Println()
	}
	printStatTable("grp", grps, func(g int64) int64 { return int64(truth[g].n) }, func(g int64) [3][2]*acc {
		return [3][2]*acc{{&dA[g].count, &gA[g].count}, {&dA[g].sum, &gA[g].sum}, {&dA[g].avg, &gA[g].avg}}
	})
}

// eventsKeys answers COUNT(*) by w (no public list: key selection at
// (ε, δ)) on rows_as_people against Google's thresholded Laplace count.
func (b *bench) eventsKeys(cond string, rows []event) {
	sql := where("SELECT w, COUNT(*) FROM rows_as_people", cond) + " GROUP BY w"
	truth := map[int64]int64{}
	for i := range rows {
		truth[rows[i].w]++
	}
	fmt.Printf("## Key selection: %s (ε = %g, δ = %g, L0 = 1)\n\n", sql, b.eps, b.delta)
	p, ex := b.prepare(sql, b.delta)
	var dErr, gErr acc
	var dTotal, gTotal int
	small := map[int64]bool{}
	for k, n := range truth {
		if n <= 20 {
			small[k] = true
		}
	}
	var dSmall, gSmall int
	for range b.runs {
		res, err := p.Release(ex)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range res.Rows {
			k := r[0].(int64)
			dTotal++
			if small[k] {
				dSmall++
			}
			dErr.add(float64(r[1].(int64)-truth[k]), false)
		}
	}
	keys := make([]int64, 0, len(truth))
	for k := range truth {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for range b.runs {
		for _, k := range keys {
			v := googleCount(b.eps, b.delta, truth[k])
			if v != nil {
				gTotal++
				if small[k] {
					gSmall++
				}
				gErr.add(float64(*v-truth[k]), false)
			}
		}
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, n := range truth {
		lo, hi = min(lo, n), max(hi, n)
	}
	fmt.Printf("%d keys with %d–%d rows (%d with at most 20)\n\n", len(truth), lo, hi, len(small))
	fmt.Printf("| | dpstat | Google |\n|---|---:|---:|\n")
	fmt.Printf("| keys kept per run, of %d (mean) | %.2f | %.2f |\n", len(truth), float64(dTotal)/float64(b.runs), float64(gTotal)/float64(b.runs))
	fmt.Printf("| keys of at most 20 rows kept per run, of %d | %.2f | %.2f |\n", len(small), float64(dSmall)/float64(b.runs), float64(gSmall)/float64(b.runs))
	fmt.Printf("| RMSE of the kept keys' counts | %.3f | %.3f |\n", dErr.rmse(), gErr.rmse())
	fmt.Printf("| bias of the kept keys' counts | %.3f | %.3f |\n\n", dErr.bias(), gErr.bias())
}

// eventsMedian answers MEDIAN(v) by grp on rows_as_people against Google's
// BoundedQuantiles (built once per group, released from fresh copies).
func (b *bench) eventsMedian(cond string, rows []event) {
	sql := where("SELECT grp, MEDIAN(v) FROM rows_as_people", cond) + " GROUP BY grp"
	truth := truthByGroup(rows, func(e *event) int64 { return e.grp })
	fmt.Printf("## %s (ε = %g; v in [%d, %d]) against BoundedQuantiles\n\n", sql, b.eps, vLower, vUpper)
	p, ex := b.prepare(sql, 0)
	d, g := map[int64]*acc{}, map[int64]*acc{}
	want := map[int64]float64{}
	encs := map[int64][]byte{}
	for k, t := range truth {
		d[k], g[k] = &acc{}, &acc{}
		s := append([]float64{}, t.vs...)
		sort.Float64s(s)
		if n := len(s); n%2 == 1 {
			want[k] = s[n/2]
		} else {
			want[k] = (s[n/2-1] + s[n/2]) / 2
		}
		q, err := dpagg.NewBoundedQuantiles(&dpagg.BoundedQuantilesOptions{Epsilon: b.eps, MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, Lower: vLower, Upper: vUpper, Noise: gnoise.Laplace()})
		if err != nil {
			log.Fatal(err)
		}
		for _, v := range t.vs {
			q.Add(v)
		}
		encs[k] = mustGob(q)
	}
	for range b.runs {
		res, err := p.Release(ex)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range res.Rows {
			k := r[0].(int64)
			if a := d[k]; a != nil {
				a.add(toFloat(r[1])-want[k], false)
			}
		}
		for k, e := range encs {
			q := gobClone[dpagg.BoundedQuantiles](e)
			v, err := q.Result(0.5)
			if err != nil {
				log.Fatal(err)
			}
			g[k].add(v-want[k], false)
		}
	}
	keys := make([]int64, 0, len(truth))
	for k := range truth {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	fmt.Printf("| grp | people | true median | dpstat MAE | Google MAE | dpstat bias | Google bias |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range keys {
		fmt.Printf("| %d | %d | %g | %.4f | %.4f | %.4f | %.4f |\n", k, len(truth[k].vs), want[k], d[k].mae(), g[k].mae(), d[k].bias(), g[k].bias())
	}
	fmt.Println()
}

func toFloat(x any) float64 {
	switch v := x.(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	}
	return math.NaN()
}
