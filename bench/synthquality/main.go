// Command synthquality measures the quality, time and memory of dpstat's
// synthetic tables (package synth, MST) on the Adult table of the examples
// catalog.
//
// Quality: for each ε, over -runs releases, the mean total variation
// distance between the synthetic and the real table over all 1-way, 2-way
// and 3-way marginals of the synthesized columns (on their discretized
// domains: public values, NULL, and the bins of numeric columns), for MST
// and for the independent baseline at the same cost (every 1-way marginal
// measured with the whole ρ, columns sampled independently). Medians over
// the runs are printed.
//
// Time: the read (contribution bounding and counting in the engine),
// measuring, fitting, sampling and writing the CSV, on Adult and on a table
// of -big rows drawn from Adult's rows, with the process's peak memory.
//
//	cd bench && go run ./synthquality -runs 5
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/random"
	"github.com/dpstat/dpstat/synth"
)

func main() {
	catPath := flag.String("catalog", "../examples/catalog.yaml", "the catalog declaring the adult table")
	runs := flag.Int("runs", 5, "releases per ε")
	epsList := flag.String("epsilon", "0.1,1,10", "the ε values, comma-separated")
	delta := flag.Float64("delta", 1e-6, "δ of every release")
	big := flag.Int("big", 1_000_000, "rows of the large table for the timing (0: skip)")
	timing := flag.Bool("time", true, "measure time and memory")
	flag.Parse()
	ctx := context.Background()
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
	src := random.NewSecure()
	fmt.Printf("synthetic Adult, MST against the independent baseline, δ=%g, %d runs each, medians\n", *delta, *runs)
	fmt.Println("ε\tk\tMST TV\tindependent TV\texact independent TV\tMST rows")
	for _, f := range strings.Split(*epsList, ",") {
		var eps float64
		if _, err := fmt.Sscan(f, &eps); err != nil {
			log.Fatalf("-epsilon %q: %v", f, err)
		}
		plan, err := synth.NewPlan(tbl, synth.Options{Epsilon: eps, Delta: *delta})
		if err != nil {
			log.Fatal(err)
		}
		data, err := plan.Read(ctx, eng)
		if err != nil {
			log.Fatal(err)
		}
		mst := make([][]float64, 4)
		ind := make([][]float64, 4)
		var rows []float64
		for r := 0; r < *runs; r++ {
			res, err := plan.Synthesize(data, src)
			if err != nil {
				log.Fatal(err)
			}
			base, err := plan.Independent(data, src)
			if err != nil {
				log.Fatal(err)
			}
			rows = append(rows, float64(res.N))
			for k := 1; k <= 3; k++ {
				mst[k] = append(mst[k], MeanTV(plan, data, res, k))
				ind[k] = append(ind[k], MeanTV(plan, data, base, k))
			}
		}
		for k := 1; k <= 3; k++ {
			fmt.Printf("%g\t%d\t%.4f\t%.4f\t%.4f\t%.0f\n", eps, k, median(mst[k]), median(ind[k]), ExactIndependentTV(plan, data, k), median(rows))
		}
	}
	if !*timing {
		return
	}
	fmt.Println("\ntime (read + measure + fit + sample + write CSV), ε=1")
	timeOne(ctx, eng, tbl, "adult", src)
	if *big > 0 {
		dir, err := os.MkdirTemp("", "synthquality")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "big.csv")
		if err := resample(tbl.Source, path, *big); err != nil {
			log.Fatal(err)
		}
		bigCat := *cat
		bt := *tbl
		bt.Name, bt.Source = "adult_big", path
		bigCat.Tables = []*catalog.Table{&bt}
		if err := query.Register(ctx, &bigCat, eng); err != nil {
			log.Fatal(err)
		}
		timeOne(ctx, eng, &bt, fmt.Sprintf("%d rows", *big), src)
	}
	fmt.Println("peak memory of the process (VmHWM):", peakRSS())
}

func timeOne(ctx context.Context, eng *duckdb.Engine, t *catalog.Table, what string, src random.Source) {
	var ds []time.Duration
	for r := 0; r < 3; r++ {
		start := time.Now()
		plan, err := synth.NewPlan(t, synth.Options{Epsilon: 1, Delta: 1e-6})
		if err != nil {
			log.Fatal(err)
		}
		data, err := plan.Read(ctx, eng)
		if err != nil {
			log.Fatal(err)
		}
		read := time.Since(start)
		res, err := plan.Synthesize(data, src)
		if err != nil {
			log.Fatal(err)
		}
		if err := res.WriteCSV(io.Discard, src); err != nil {
			log.Fatal(err)
		}
		d := time.Since(start)
		ds = append(ds, d)
		fmt.Printf("%s: %v (read %v, %d combinations, %d rows written)\n", what, d.Round(time.Millisecond), read.Round(time.Millisecond), len(data.Counts), res.N)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	fmt.Printf("%s: median %v\n", what, ds[len(ds)/2].Round(time.Millisecond))
}

// MeanTV is the mean, over every set of k synthesized columns, of the
// total variation distance between the real and the synthetic marginal.
func MeanTV(p *synth.Plan, real *synth.Data, syn *synth.Result, k int) float64 {
	n := len(p.Attrs)
	sum, count := 0.0, 0
	var rec func(start int, set []int)
	rec = func(start int, set []int) {
		if len(set) == k {
			sum += tv(p, real, syn, set)
			count++
			return
		}
		for j := start; j < n; j++ {
			rec(j+1, append(set, j))
		}
	}
	rec(0, nil)
	if count == 0 {
		return math.NaN()
	}
	return sum / float64(count)
}

// ExactIndependentTV is the mean total variation distance over every set
// of k columns between the real marginal and the product of the real 1-way
// marginals: the best any model treating columns as independent can do,
// without noise or sampling error (not a DP release; a reference).
func ExactIndependentTV(p *synth.Plan, real *synth.Data, k int) float64 {
	n := len(p.Attrs)
	one := make([][]float64, n)
	total := 0.0
	for _, c := range real.Counts {
		total += float64(c)
	}
	for j, a := range p.Attrs {
		one[j] = make([]float64, a.Size())
		for r, cells := range real.Cells {
			one[j][cells[j]] += float64(real.Counts[r]) / total
		}
	}
	sum, count := 0.0, 0
	var rec func(start int, set []int)
	rec = func(start int, set []int) {
		if len(set) == k {
			size := 1
			for _, j := range set {
				size *= p.Attrs[j].Size()
			}
			pr := make([]float64, size)
			for r, cells := range real.Cells {
				x := 0
				for _, j := range set {
					x = x*p.Attrs[j].Size() + int(cells[j])
				}
				pr[x] += float64(real.Counts[r]) / total
			}
			d := 0.0
			for x := range pr {
				prod, rest := 1.0, x
				for i := len(set) - 1; i >= 0; i-- {
					sz := p.Attrs[set[i]].Size()
					prod *= one[set[i]][rest%sz]
					rest /= sz
				}
				d += math.Abs(pr[x] - prod)
			}
			sum += d / 2
			count++
			return
		}
		for j := start; j < n; j++ {
			rec(j+1, append(set, j))
		}
	}
	rec(0, nil)
	return sum / float64(count)
}

func tv(p *synth.Plan, real *synth.Data, syn *synth.Result, set []int) float64 {
	size := 1
	for _, j := range set {
		size *= p.Attrs[j].Size()
	}
	pr := make([]float64, size)
	ps := make([]float64, size)
	total := 0.0
	for r, cells := range real.Cells {
		x := 0
		for _, j := range set {
			x = x*p.Attrs[j].Size() + int(cells[j])
		}
		pr[x] += float64(real.Counts[r])
		total += float64(real.Counts[r])
	}
	for i := 0; i < syn.N; i++ {
		x := 0
		for _, j := range set {
			x = x*p.Attrs[j].Size() + int(syn.Rows[j][i])
		}
		ps[x]++
	}
	d := 0.0
	for x := range pr {
		a := pr[x] / total
		b := 0.0
		if syn.N > 0 {
			b = ps[x] / float64(syn.N)
		}
		d += math.Abs(a - b)
	}
	return d / 2
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[len(s)/2]
}

// resample writes n rows drawn with replacement from the CSV at src (a
// fixed-seed draw: the table is data for timing, not a release).
func resample(srcPath, dst string, n int) error {
	f, err := os.Open(srcPath)
	if err != nil {
		return err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := csv.NewWriter(out)
	if err := w.Write(recs[0]); err != nil {
		return err
	}
	rng := random.NewInsecureSeeded(1)
	body := recs[1:]
	for i := 0; i < n; i++ {
		if err := w.Write(body[rng.Uint64()%uint64(len(body))]); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return out.Close()
}

func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:"))
		}
	}
	return "unknown"
}
