// Command benchreuse runs a scripted exploration session on the Adult
// table twice at one accuracy target, once with every answer fresh and
// once deriving what it can from earlier releases (package query/reuse),
// each with the same per-analyst budget, and reports how many queries each
// answered before the budget refused one, and how often the 95% intervals
// of the answered cells covered the true values (computed by a third
// service at ε = 1e20).
//
//	go run ./internal/bench/benchreuse -catalog examples/catalog.yaml -budget 3 -accuracy 40 -seeds 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

// columns are Adult's columns with complete declared value lists.
var columns = []string{"marital_status", "relationship", "race", "sex", "income"}

// session returns the scripted exploration, in order: per topic (three
// columns) the three-way marginal, its two-way and one-way marginals,
// slices (one column fixed to a value, grouped by another), subsets of
// keys, and the two-way marginals again with looser and tighter targets
// (factor × the accuracy); then binned age ranges, each grouped by sex
// and race, then by sex, then in total. Some marginals also ask for the
// mean hours per week.
type step struct {
	sql    string
	factor float64
}

func session(cat *catalog.Catalog, r *rand.Rand) []step {
	t := cat.Table("adult")
	values := func(c string) []string {
		var out []string
		for _, v := range t.Column(c).Values {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	agg := func() string {
		if r.IntN(3) == 0 {
			return "COUNT(*) AS n, AVG(hours_per_week) AS avg_hours"
		}
		return "COUNT(*) AS n"
	}
	var topics [][]string
	for a := 0; a < len(columns); a++ {
		for b := a + 1; b < len(columns); b++ {
			for c := b + 1; c < len(columns); c++ {
				topics = append(topics, []string{columns[a], columns[b], columns[c]})
			}
		}
	}
	r.Shuffle(len(topics), func(i, j int) { topics[i], topics[j] = topics[j], topics[i] })
	var s []step
	add := func(sql string) { s = append(s, step{sql, 1}) }
	for _, tp := range topics {
		r.Shuffle(len(tp), func(i, j int) { tp[i], tp[j] = tp[j], tp[i] })
		add(fmt.Sprintf("SELECT %s, %s FROM adult GROUP BY %s", strings.Join(tp, ", "), agg(), strings.Join(tp, ", ")))
		pairs := [][2]string{{tp[0], tp[1]}, {tp[0], tp[2]}, {tp[1], tp[2]}}
		for _, p := range pairs {
			add(fmt.Sprintf("SELECT %s, %s, COUNT(*) AS n FROM adult GROUP BY %s, %s", p[0], p[1], p[0], p[1]))
		}
		for _, c := range tp {
			add(fmt.Sprintf("SELECT %s, %s FROM adult GROUP BY %s", c, agg(), c))
		}
		for _, p := range pairs {
			for _, q := range [][2]string{p, {p[1], p[0]}} {
				vs := values(q[0])
				for k := 0; k < 3 && k < len(vs); k++ {
					v := vs[r.IntN(len(vs))]
					add(fmt.Sprintf("SELECT %s, COUNT(*) AS n FROM adult WHERE %s = '%s' GROUP BY %s", q[1], q[0], v, q[1]))
				}
				if vs := values(q[1]); len(vs) > 2 {
					add(fmt.Sprintf("SELECT %s, COUNT(*) AS n FROM adult WHERE %s IN ('%s', '%s') GROUP BY %s", q[0], q[1], vs[0], vs[1], q[0]))
				}
			}
		}
		for _, p := range pairs[:2] {
			sql := fmt.Sprintf("SELECT %s, %s, COUNT(*) AS n FROM adult GROUP BY %s, %s", p[0], p[1], p[0], p[1])
			s = append(s, step{sql, 1.5}, step{sql, 0.8})
		}
	}
	for lo := 17; lo < 90; lo += 10 {
		where := fmt.Sprintf("WHERE age BETWEEN %d AND %d", lo, lo+9)
		add(fmt.Sprintf("SELECT sex, race, COUNT(*) AS n FROM adult %s GROUP BY sex, race", where))
		add(fmt.Sprintf("SELECT sex, COUNT(*) AS n FROM adult %s GROUP BY sex", where))
		add(fmt.Sprintf("SELECT COUNT(*) AS n FROM adult %s", where))
	}
	return s
}

type tally struct {
	answered, free, topUp, repeated, cells, covered int
	derivedCells, derivedCovered                    int
	spent                                           float64
	elapsed                                         time.Duration
}

func main() {
	catPath := flag.String("catalog", "examples/catalog.yaml", "the catalog declaring the adult table")
	budget := flag.Float64("budget", 3, "the analyst's ε budget on adult in each run")
	accuracy := flag.Float64("accuracy", 40, "the 95% half-width asked of every COUNT")
	seeds := flag.Int("seeds", 3, "sessions (each its own script order and noise)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	cat, err := catalog.Load(*catPath)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "dpstat-benchreuse")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	open := func(name string, eps float64) *query.Service {
		eng, err := duckdb.Open(duckdb.Options{})
		if err != nil {
			log.Fatal(err)
		}
		led, err := ledger.Open(filepath.Join(dir, name+".db"), ledger.Options{})
		if err != nil {
			log.Fatal(err)
		}
		if _, err := led.Grant(ledger.Key{Dataset: "adult", Analyst: "ann"}, accounting.EpsDelta{Epsilon: eps, Delta: 1e-5}, accounting.Basic); err != nil {
			log.Fatal(err)
		}
		if _, err := led.GrantTotal("adult", accounting.EpsDelta{Epsilon: 1e30, Delta: 0.5}, accounting.Basic); err != nil {
			log.Fatal(err)
		}
		svc, err := query.NewService(ctx, cat, eng, led)
		if err != nil {
			log.Fatal(err)
		}
		return svc
	}
	truthSvc := open("truth", 1e30)
	truths := map[string]*query.Result{}
	truth := func(sql string) *query.Result {
		if r, ok := truths[sql]; ok {
			return r
		}
		r, err := truthSvc.Answer(ctx, sql, query.Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "ann", Fresh: true})
		if err != nil {
			log.Fatalf("%s: %v", sql, err)
		}
		truths[sql] = r
		return r
	}
	fmt.Printf("budget ε=%g per run, accuracy ±%g (95%%) on every COUNT, %d sessions\n\n", *budget, *accuracy, *seeds)
	fmt.Println("| session | queries | mode | answered before the budget refused | free (derived) | topped up | repeats | ε spent | cells | coverage | derived cells | their coverage | time |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var ratios []float64
	for seed := 1; seed <= *seeds; seed++ {
		script := session(cat, rand.New(rand.NewPCG(uint64(seed), 25)))
		var res [2]tally
		for mode, fresh := range []bool{true, false} {
			svc := open(fmt.Sprintf("run-%d-%v", seed, fresh), *budget)
			src := random.NewInsecureSeeded(uint64(100*seed + mode))
			t := &res[mode]
			start := time.Now()
			for _, st := range script {
				opts := query.Options{Accuracy: &query.Accuracy{All: *accuracy * st.factor}, Confidence: 0.95, Analyst: "ann", Fresh: fresh, Source: src}
				r, err := svc.Answer(ctx, st.sql, opts)
				var ex *accounting.ExceededError
				if errors.As(err, &ex) {
					break
				}
				if err != nil {
					log.Fatalf("%s: %v", st.sql, err)
				}
				t.answered++
				switch {
				case r.Repeated:
					t.repeated++
				case r.Derived != nil && r.Cost.Epsilon == 0:
					t.free++
				case r.Derived != nil:
					t.topUp++
				}
				t.spent = r.Budget.Spent.Epsilon
				tr := truth(st.sql)
				for i, row := range r.Rows {
					for j, iv := range r.CI[i] {
						if iv == nil {
							continue
						}
						want, _ := ir.Number(tr.Rows[i][j])
						ok := iv.Low <= want && want <= iv.High
						t.cells++
						if ok {
							t.covered++
						}
						if r.Derived != nil {
							t.derivedCells++
							if ok {
								t.derivedCovered++
							}
						}
						_ = row
					}
				}
			}
			t.elapsed = time.Since(start)
			name := map[bool]string{true: "fresh", false: "reuse"}[fresh]
			fmt.Printf("| %d | %d | %s | %d | %d | %d | %d | %.4g | %d | %.4f | %d | %s | %.1f s |\n", seed, len(script), name,
				t.answered, t.free, t.topUp, t.repeated, t.spent, t.cells, float64(t.covered)/float64(t.cells), t.derivedCells,
				cov(t.derivedCovered, t.derivedCells), t.elapsed.Seconds())
		}
		ratios = append(ratios, float64(res[1].answered)/float64(res[0].answered))
	}
	sort.Float64s(ratios)
	fmt.Printf("\nanswered with reuse / without, per session: %v; median %.2f×\n", fmtRatios(ratios), ratios[len(ratios)/2])
}

func cov(c, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.4f", float64(c)/float64(n))
}

func fmtRatios(r []float64) string {
	s := make([]string, len(r))
	for i, x := range r {
		s[i] = fmt.Sprintf("%.2f×", x)
	}
	return strings.Join(s, ", ")
}
