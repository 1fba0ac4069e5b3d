// Command accuracy measures dpstat's answers against Google's
// differential-privacy library (github.com/google/differential-privacy/go/v3
// v3.0.0) at the same (ε, δ), bounds and contribution limits, over many
// runs, on the Adult table (the default) or on the 10M-row benchmark table
// (-table events, see events.go), and prints the exact bias of both
// libraries' AVG estimators (-table avg-bias, see avgbias.go).
//
// On Adult (one row per person: L0 = 1, L∞ = 1):
//
//   - key selection: GROUP BY native_country with COUNT(*) at (ε, δ); dpstat's
//     key selection against Google's thresholded Laplace count
//     (Count.ThresholdedResult): keys kept per run, how often each small
//     key is kept, and the RMSE of the kept keys' counts;
//   - COUNT(*), SUM(age) and AVG(age) together by race (ε split in three, AVG's
//     share split between its sum and count on both sides): RMSE and bias per
//     group, and how often each side's 95% interval covers the truth;
//   - MEDIAN(age) by sex against Google's BoundedQuantiles: mean absolute error.
//
// dpstat plans each query once, reads its exact statistics from the engine
// once, and releases them with fresh noise from its secure source in every
// run (the release is all that is random for a table of one row per person);
// Google's aggregations are rebuilt from the rows in every run.
//
//	cd bench && go run ./accuracy -runs 1000
//	cd bench && go run ./accuracy -table events -runs 1000 -draws 5
//	cd bench && go run ./accuracy -table avg-bias
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"

	"github.com/google/differential-privacy/go/v3/dpagg"
	gnoise "github.com/google/differential-privacy/go/v3/noise"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/bench/benchdata"
	"github.com/dpstat/dpstat/query"
)

func main() {
	catPath := flag.String("catalog", "../examples/catalog.yaml", "the catalog declaring the adult table")
	runs := flag.Int("runs", 1000, "runs per side")
	epsilon := flag.Float64("epsilon", 1, "ε of each query")
	delta := flag.Float64("delta", 1e-6, "δ of the key-selection query")
	table := flag.String("table", "adult", "adult; events, the benchmark table of internal/benchdata; or avg-bias, the exact bias of both AVG estimators")
	dir := flag.String("dir", benchdata.DefaultDir(), "where the benchmark table is generated (-table events)")
	rows := flag.Int("rows", 10_000_000, "rows of the benchmark table (-table events)")
	draws := flag.Int("draws", 5, "engine reads of each bounded query, each a fresh random bounding (-table events)")
	flag.Parse()
	if *runs < 1 {
		log.Fatalf("-runs %d: want at least 1", *runs)
	}
	if !(*epsilon > 0) || math.IsInf(*epsilon, 0) {
		log.Fatalf("-epsilon %v: want a finite number > 0", *epsilon)
	}
	if !(*delta > 0 && *delta < 1) {
		log.Fatalf("-delta %v: want a number in (0, 1)", *delta)
	}
	ctx := context.Background()
	switch *table {
	case "adult":
	case "events":
		runEvents(ctx, *runs, *draws, *epsilon, *delta, *dir, *rows)
		return
	case "avg-bias":
		avgBias()
		return
	default:
		log.Fatalf("-table %q: want adult, events or avg-bias", *table)
	}
	cat, err := catalog.Load(*catPath)
	if err != nil {
		log.Fatal(err)
	}
	eng, err := duckdb.Open(duckdb.Options{Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := query.Register(ctx, cat, eng); err != nil {
		log.Fatal(err)
	}
	tbl := cat.Table("adult")
	if tbl == nil {
		log.Fatalf("catalog %s has no table adult", *catPath)
	}
	src := tbl.Source
	if !filepath.IsAbs(src) {
		src = filepath.Join(filepath.Dir(*catPath), src)
	}
	people, err := readAdult(src)
	if err != nil {
		log.Fatal(err)
	}
	b := &bench{ctx: ctx, cat: cat, eng: eng, runs: *runs, eps: *epsilon, delta: *delta, people: people}
	fmt.Printf("machine: %s/%s, %d cores; Adult, %d rows (one per person); ε = %g, δ = %g; %d runs per side\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), len(people), *epsilon, *delta, *runs)
	b.keySelection()
	b.countSumAvg()
	b.median()
}

// person is one row of Adult: the columns the queries read.
type person struct {
	age                int64
	race, sex, country string
}

func readAdult(path string) ([]person, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, c := range []string{"age", "race", "sex", "native_country"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: no column %q", path, c)
		}
	}
	var out []person
	for _, r := range recs[1:] {
		age, err := strconv.ParseInt(r[col["age"]], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: age %q: want an integer", path, r[col["age"]])
		}
		out = append(out, person{age: age, race: r[col["race"]], sex: r[col["sex"]], country: r[col["native_country"]]})
	}
	return out, nil
}

type bench struct {
	ctx    context.Context
	cat    *catalog.Catalog
	eng    *duckdb.Engine
	runs   int
	eps    float64
	delta  float64
	people []person
}

// dpstatRuns prepares sql once, reads its exact statistics once and
// releases them runs times.
func (b *bench) dpstatRuns(sql string, delta float64, each func(*query.Result)) {
	p, ex := b.prepare(sql, delta)
	for range b.runs {
		res, err := p.Release(ex)
		if err != nil {
			log.Fatal(err)
		}
		each(res)
	}
}

// acc accumulates errors of one statistic in one group.
type acc struct {
	n, covered       int
	sum, sumSq, sumA float64
	width            float64 // sum of the intervals' widths (addCI)
}

func (a *acc) add(err float64, covered bool) {
	a.n++
	a.sum += err
	a.sumSq += err * err
	a.sumA += math.Abs(err)
	if covered {
		a.covered++
	}
}

// addCI adds an error and the interval [low, high] released with it,
// which covers the truth when low ≤ truth ≤ high.
func (a *acc) addCI(err, low, high, truth float64) {
	a.add(err, low <= truth && truth <= high)
	a.width += high - low
}

func (a *acc) meanWidth() float64 { return a.width / float64(max(a.n, 1)) }
func (a *acc) rmse() float64      { return math.Sqrt(a.sumSq / float64(max(a.n, 1))) }
func (a *acc) bias() float64      { return a.sum / float64(max(a.n, 1)) }
func (a *acc) mae() float64       { return a.sumA / float64(max(a.n, 1)) }
func (a *acc) coverage() float64  { return float64(a.covered) / float64(max(a.n, 1)) }

func (b *bench) keySelection() {
	truth := map[string]int64{}
	for _, p := range b.people {
		truth[p.country]++
	}
	keys := sortedKeys(truth)
	fmt.Printf("## Key selection: SELECT native_country, COUNT(*) FROM adult GROUP BY native_country (ε = %g, δ = %g, L0 = 1)\n\n", b.eps, b.delta)
	dKept, gKept := map[string]int{}, map[string]int{}
	var dErr, gErr acc
	var dTotal, gTotal int
	b.dpstatRuns("SELECT native_country, COUNT(*) FROM adult GROUP BY native_country", b.delta, func(res *query.Result) {
		for _, r := range res.Rows {
			k := ""
			if s, ok := r[0].(string); ok {
				k = s
			}
			dKept[k]++
			dTotal++
			dErr.add(float64(r[1].(int64)-truth[k]), false)
		}
	})
	for range b.runs {
		for _, k := range keys {
			v := googleCount(b.eps, b.delta, truth[k])
			if v != nil {
				gKept[k]++
				gTotal++
				gErr.add(float64(*v-truth[k]), false)
			}
		}
	}
	fmt.Printf("| | dpstat | Google |\n|---|---:|---:|\n")
	fmt.Printf("| keys kept per run, of %d (mean) | %.1f | %.1f |\n", len(keys), float64(dTotal)/float64(b.runs), float64(gTotal)/float64(b.runs))
	fmt.Printf("| RMSE of the kept keys' counts | %.2f | %.2f |\n", dErr.rmse(), gErr.rmse())
	fmt.Printf("| bias of the kept keys' counts | %.2f | %.2f |\n", dErr.bias(), gErr.bias())
	sort.Slice(keys, func(i, j int) bool { return truth[keys[i]] < truth[keys[j]] })
	fmt.Printf("\nhow often each small key is kept:\n\n| key | people | dpstat | Google |\n|---|---:|---:|---:|\n")
	for _, k := range keys {
		if truth[k] > 40 {
			continue
		}
		fmt.Printf("| %s | %d | %.3f | %.3f |\n", label(k), truth[k], float64(dKept[k])/float64(b.runs), float64(gKept[k])/float64(b.runs))
	}
	fmt.Println()
}

func label(k string) string {
	if k == "" {
		return "(NULL)"
	}
	return k
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (b *bench) countSumAvg() {
	const lo, hi = 17, 90
	type truthT struct {
		n, sum int64
		ages   []int64
	}
	truth := map[string]*truthT{}
	for _, p := range b.people {
		t := truth[p.race]
		if t == nil {
			t = &truthT{}
			truth[p.race] = t
		}
		t.n++
		t.sum += min(max(p.age, lo), hi)
		t.ages = append(t.ages, p.age)
	}
	races := sortedKeys(truth)
	fmt.Printf("## COUNT(*), SUM(age), AVG(age) by race (ε = %g split in three; age in [%d, %d])\n\n", b.eps, lo, hi)
	type accs struct{ count, sum, avg acc }
	dA, gA := map[string]*accs{}, map[string]*accs{}
	for _, r := range races {
		dA[r], gA[r] = &accs{}, &accs{}
	}
	b.dpstatRuns("SELECT race, COUNT(*), SUM(age), AVG(age) FROM adult GROUP BY race", 0, func(res *query.Result) {
		for i, r := range res.Rows {
			k := r[0].(string)
			t, a := truth[k], dA[k]
			mean := float64(t.sum) / float64(t.n)
			ci := res.CI[i]
			a.count.addCI(float64(r[1].(int64)-t.n), ci[1].Low, ci[1].High, float64(t.n))
			a.sum.addCI(r[2].(float64)-float64(t.sum), ci[2].Low, ci[2].High, float64(t.sum))
			a.avg.addCI(r[3].(float64)-mean, ci[3].Low, ci[3].High, mean)
		}
	})
	share := b.eps / 3
	for range b.runs {
		for _, k := range races {
			t, a := truth[k], gA[k]
			c, err := dpagg.NewCount(&dpagg.CountOptions{Epsilon: share, MaxPartitionsContributed: 1, Noise: gnoise.Laplace()})
			if err != nil {
				log.Fatal(err)
			}
			s, err := dpagg.NewBoundedSumInt64(&dpagg.BoundedSumInt64Options{Epsilon: share, MaxPartitionsContributed: 1, Lower: lo, Upper: hi, Noise: gnoise.Laplace()})
			if err != nil {
				log.Fatal(err)
			}
			m, err := dpagg.NewBoundedMean(&dpagg.BoundedMeanOptions{Epsilon: share, MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, Lower: lo, Upper: hi, Noise: gnoise.Laplace()})
			if err != nil {
				log.Fatal(err)
			}
			for _, age := range t.ages {
				c.Increment()
				s.Add(age)
				m.Add(float64(age))
			}
			mean := float64(t.sum) / float64(t.n)
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
			// Google's intervals are computed after the result, as its API
			// requires; they are post-processing of the same noise.
			cci, _ := c.ComputeConfidenceInterval(0.05)
			sci, _ := s.ComputeConfidenceInterval(0.05)
			mci, _ := m.ComputeConfidenceInterval(0.05)
			a.count.addCI(float64(cv-t.n), float64(cci.LowerBound), float64(cci.UpperBound), float64(t.n))
			a.sum.addCI(float64(sv-t.sum), float64(sci.LowerBound), float64(sci.UpperBound), float64(t.sum))
			a.avg.addCI(mv-mean, mci.LowerBound, mci.UpperBound, mean)
		}
	}
	printStatTable("race", races, func(k string) int64 { return truth[k].n }, func(k string) [3][2]*acc {
		return [3][2]*acc{{&dA[k].count, &gA[k].count}, {&dA[k].sum, &gA[k].sum}, {&dA[k].avg, &gA[k].avg}}
	})
}

func (b *bench) median() {
	const lo, hi = 17, 90
	ages := map[string][]int64{}
	for _, p := range b.people {
		ages[p.sex] = append(ages[p.sex], p.age)
	}
	// Smaller groups too: sex within the smallest races.
	for _, p := range b.people {
		if p.race == "Other" || p.race == "Amer-Indian-Eskimo" {
			k := p.race + "/" + p.sex
			ages[k] = append(ages[k], p.age)
		}
	}
	fmt.Printf("## MEDIAN(age) (ε = %g; age in [%d, %d]) against Google's BoundedQuantiles\n\n", b.eps, lo, hi)
	fmt.Printf("| group | people | true median | dpstat MAE | Google MAE | dpstat bias | Google bias |\n|---|---:|---:|---:|---:|---:|---:|\n")
	truthOf := func(xs []int64) float64 {
		s := append([]int64{}, xs...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		n := len(s)
		if n%2 == 1 {
			return float64(s[n/2])
		}
		return float64(s[n/2-1]+s[n/2]) / 2
	}
	for _, k := range sortedKeys(ages) {
		xs := ages[k]
		want := truthOf(xs)
		var d, g acc
		sql := "SELECT MEDIAN(age) FROM adult WHERE sex = '" + k + "'"
		if i := indexByte(k, '/'); i >= 0 {
			sql = "SELECT MEDIAN(age) FROM adult WHERE race = '" + k[:i] + "' AND sex = '" + k[i+1:] + "'"
		}
		b.dpstatRuns(sql, 0, func(res *query.Result) {
			for _, r := range res.Rows {
				v, ok := r[0].(float64)
				if !ok {
					if iv, ok2 := r[0].(int64); ok2 {
						v = float64(iv)
					}
				}
				d.add(v-want, false)
			}
		})
		for range b.runs {
			q, err := dpagg.NewBoundedQuantiles(&dpagg.BoundedQuantilesOptions{Epsilon: b.eps, MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, Lower: lo, Upper: hi, Noise: gnoise.Laplace()})
			if err != nil {
				log.Fatal(err)
			}
			for _, x := range xs {
				q.Add(float64(x))
			}
			v, err := q.Result(0.5)
			if err != nil {
				log.Fatal(err)
			}
			g.add(v-want, false)
		}
		fmt.Printf("| %s | %d | %g | %.3f | %.3f | %.3f | %.3f |\n", k, len(xs), want, d.mae(), g.mae(), d.bias(), g.bias())
	}
	fmt.Println()
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// printStatTable prints, per group and statistic (COUNT, SUM, AVG), both
// sides' RMSE, bias, coverage of their 95% intervals and the intervals'
// mean width; accs(k) gives dpstat's and Google's accumulators.
func printStatTable[K any](name string, keys []K, size func(K) int64, accs func(K) [3][2]*acc) {
	fmt.Printf("| %s | rows | statistic | dpstat RMSE | Google RMSE | ratio | dpstat bias | Google bias | dpstat coverage | Google coverage | dpstat width | Google width | width ratio |\n", name)
	fmt.Printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range keys {
		for i, st := range accs(k) {
			d, g := st[0], st[1]
			fmt.Printf("| %v | %d | %s | %.4g | %.4g | %.2f | %.3g | %.3g | %.3f | %.3f | %.4g | %.4g | %.2f |\n", k, size(k), []string{"COUNT", "SUM", "AVG"}[i],
				d.rmse(), g.rmse(), d.rmse()/g.rmse(), d.bias(), g.bias(), d.coverage(), g.coverage(), d.meanWidth(), g.meanWidth(), d.meanWidth()/g.meanWidth())
		}
	}
	fmt.Println()
}

// googleCount releases the count n of one partition with Google's
// library: Laplace noise for ε, each person in one partition, and its
// threshold for δ; nil when the threshold drops the partition.
func googleCount(eps, delta float64, n int64) *int64 {
	c, err := dpagg.NewCount(&dpagg.CountOptions{Epsilon: eps, MaxPartitionsContributed: 1, Noise: gnoise.Laplace()})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.IncrementBy(n); err != nil {
		log.Fatal(err)
	}
	v, err := c.ThresholdedResult(delta)
	if err != nil {
		log.Fatal(err)
	}
	return v
}
