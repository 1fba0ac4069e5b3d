package query

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/random"
)

// parseAccuracy reads an accuracy as the front ends do
// (answer.ParseAccuracy) into the service's Accuracy.
func parseAccuracy(s string) (*Accuracy, error) {
	a, err := answer.ParseAccuracy(s)
	if err != nil {
		return nil, err
	}
	return &Accuracy{All: a.All, Columns: a.Columns}, nil
}

// targetWidths returns the planned half-width of every column an accuracy
// targets, at the prepared query's noise.
func targetWidths(t *testing.T, p *Prepared, acc *Accuracy) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, c := range p.Explain().Columns {
		if c.Kind != "aggregate" || c.HalfWidthNote != "" {
			continue
		}
		if _, ok := acc.Columns[c.Name]; acc.All > 0 || ok {
			out[c.Name] = c.HalfWidth
		}
	}
	return out
}

func accuracyOf(acc *Accuracy, col string) float64 {
	if acc.All > 0 {
		return acc.All
	}
	return acc.Columns[col]
}

// meetsAt prepares sql at ε eps (and δ) and reports whether every targeted
// column's planned half-width meets acc.
func meetsAt(t *testing.T, svc *Service, sql string, acc *Accuracy, eps, delta float64) bool {
	t.Helper()
	p, err := svc.Prepare(sql, Options{Epsilon: eps, Delta: delta, Confidence: 0.95, Analyst: "a"})
	if err != nil {
		t.Fatalf("prepare at ε=%g: %v", eps, err)
	}
	w := targetWidths(t, p, acc)
	if len(w) == 0 {
		t.Fatalf("no targeted column in %s", sql)
	}
	for c, h := range w {
		if h > accuracyOf(acc, c) {
			return false
		}
	}
	return true
}

// TestAccuracySearch: the ε an accuracy chooses meets every target, ε
// lowered by a thousandth does not, the predicate is monotone around it,
// and the query is charged exactly that ε.
func TestAccuracySearch(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	tests := []struct {
		name, sql, accuracy string
		delta               float64
	}{
		{"count", "SELECT COUNT(*) AS n FROM people", "20", 0},
		{"count small", "SELECT COUNT(*) AS n FROM people", "3", 0},
		{"sum int", "SELECT SUM(age) AS s FROM people", "500", 0},
		{"sum float", "SELECT SUM(score) AS s FROM people", "7.5", 0},
		{"grouped", "SELECT city, COUNT(*) AS n FROM people GROUP BY city", "10", 0},
		{"grouped two keys", "SELECT city, flag, COUNT(*) AS n, SUM(score) AS s FROM people GROUP BY city, flag", "25", 0},
		{"multi-aggregate", "SELECT COUNT(*) AS n, SUM(score) AS s, AVG(age) AS a FROM people", "15", 0},
		{"per column", "SELECT COUNT(*) AS n, SUM(score) AS s FROM people", "n=20,s=3", 0},
		{"per column, one of two", "SELECT COUNT(*) AS n, SUM(score) AS s FROM people", "s=40", 0},
		{"gaussian eligible", "SELECT COUNT(*) AS n, SUM(score) AS s, COUNT(age) AS c FROM people", "n=20,s=30,c=20", 1e-6},
		{"count distinct", "SELECT COUNT(DISTINCT city) AS d FROM people", "4", 0},
		{"key selection", "SELECT id, COUNT(*) AS n FROM people GROUP BY id", "30", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acc, err := parseAccuracy(tt.accuracy)
			if err != nil {
				t.Fatal(err)
			}
			p, err := svc.Prepare(tt.sql, Options{Accuracy: acc, Delta: tt.delta, Confidence: 0.95, Analyst: "a"})
			if err != nil {
				t.Fatal(err)
			}
			eps := p.Opts.Epsilon
			if p.Accuracy == nil || p.Accuracy.Epsilon != eps || p.Noise.Cost.Epsilon != eps {
				t.Fatalf("accuracy plan %+v, ε %g, cost %+v: want the chosen ε charged", p.Accuracy, eps, p.Noise.Cost)
			}
			if m, _, _ := strings.Cut(strconv.FormatFloat(eps, 'e', -1, 64), "e"); len(strings.ReplaceAll(m, ".", "")) > dpplan.EpsilonDigits {
				t.Errorf("ε=%v has more than %d significant digits", eps, dpplan.EpsilonDigits)
			}
			delta := p.Opts.Delta
			if tt.name == "key selection" && delta != DefaultSelectionDelta {
				t.Errorf("key selection without δ spent δ=%g, want the default %g", delta, DefaultSelectionDelta)
			}
			for c, h := range targetWidths(t, p, acc) {
				if h > accuracyOf(acc, c) {
					t.Errorf("at the chosen ε=%g, %s has half-width %g > asked %g", eps, c, h, accuracyOf(acc, c))
				}
			}
			if meetsAt(t, svc, tt.sql, acc, eps*(1-1e-3), delta) {
				t.Errorf("ε=%g·(1−1e-3) also meets %s: the ε found is not the smallest", eps, tt.accuracy)
			}
			for _, f := range []float64{0.1, 0.5, 0.9, 0.99, 1, 1.001, 1.1, 2, 10} {
				if got, want := meetsAt(t, svc, tt.sql, acc, eps*f, delta), f >= 1; got != want {
					t.Errorf("at ε=%g·%g: meets = %v, want %v (monotone)", eps, f, got, want)
				}
			}
		})
	}
}

// TestAccuracyRefused: invalid accuracies, and accuracies for columns
// whose half-width depends on the data, are refused naming what is
// accepted.
func TestAccuracyRefused(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	tests := []struct {
		name, sql, accuracy string
		epsilon             float64
		want                string
	}{
		{"zero", "SELECT COUNT(*) AS n FROM people", "0", 0, "want a finite number > 0"},
		{"negative", "SELECT COUNT(*) AS n FROM people", "-3", 0, "want a finite number > 0"},
		{"NaN", "SELECT COUNT(*) AS n FROM people", "NaN", 0, "want a finite number > 0"},
		{"infinite", "SELECT COUNT(*) AS n FROM people", "Inf", 0, "want a finite number > 0"},
		{"not a number", "SELECT COUNT(*) AS n FROM people", "twenty", 0, "want a finite number > 0"},
		{"unknown column", "SELECT COUNT(*) AS n, SUM(age) AS s FROM people", "n=20,total=5", 0, "no output column total; the columns that accept an accuracy are n, s"},
		{"avg column", "SELECT COUNT(*) AS n, AVG(age) AS a FROM people", "a=2", 0, "depends on the noisy count"},
		{"median column", "SELECT COUNT(*) AS n, MEDIAN(age) AS m FROM people", "m=2", 0, "the columns that accept an accuracy are n"},
		{"key column", "SELECT city, COUNT(*) AS n FROM people GROUP BY city", "city=2", 0, "is a group key"},
		{"only avg", "SELECT AVG(age) AS a FROM people", "2", 0, "no COUNT, SUM or COUNT(DISTINCT) column"},
		{"with epsilon", "SELECT COUNT(*) AS n FROM people", "20", 0.5, "keep one"},
		{"twice", "SELECT COUNT(*) AS n FROM people", "n=2,n=3", 0, "twice"},
		{"unreachable", "SELECT SUM(score) AS s FROM people", "1e-12", 0, "no ε up to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acc, err := parseAccuracy(tt.accuracy)
			if err == nil {
				_, err = svc.Prepare(tt.sql, Options{Accuracy: acc, Epsilon: tt.epsilon, Confidence: 0.95, Analyst: "a"})
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// binomialBounds returns the smallest lo and largest hi with
// P(X < lo) ≤ tail and P(X > hi) ≤ tail for X ~ Binomial(n, p).
func binomialBounds(n int, p, tail float64) (lo, hi int) {
	pmf := func(k int) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(k + 1))
		c, _ := math.Lgamma(float64(n - k + 1))
		return math.Exp(a - b - c + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	cum := 0.0
	for lo = 0; lo <= n && cum+pmf(lo) <= tail; lo++ {
		cum += pmf(lo)
	}
	cum = 0
	for hi = n; hi >= 0 && cum+pmf(hi) <= tail; hi-- {
		cum += pmf(hi)
	}
	return lo, hi
}

// TestAccuracyCoverage: a COUNT asked at ±20 is within ±20 of the truth in
// about 95% of 400 releases. The chosen mechanism's exact coverage p is
// computed (discrete Laplace: P(|Z| ≤ h) = 1 − 2a^(h+1)/(1+a), a = e^(−1/s));
// it must be at least 0.95 (the promise) and below 0.96 (the ε is the
// smallest: one less step of ε would miss 0.95). The number of covered
// releases must lie within the Binomial(400, p) bounds whose two tails are
// each at most 1e-4: the check fails wrongly with probability ≤ 2e-4 (the
// seed is fixed, so it is in fact deterministic).
func TestAccuracyCoverage(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	acc := &Accuracy{All: 20}
	p, err := svc.Prepare("SELECT COUNT(*) AS n FROM people", Options{Accuracy: acc, Confidence: 0.95, Analyst: "a", Source: random.NewInsecureSeeded(25)})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := svc.exact(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	truth := ex.Stats[0][0].Int64()
	s := p.Noise.Mechanisms[0].Scale
	a := math.Exp(-1 / s)
	cover := 1 - 2*math.Pow(a, 21)/(1+a)
	if cover < 0.95 || cover >= 0.96 {
		t.Fatalf("P(|noise| ≤ 20) = %g at scale %g: want in [0.95, 0.96)", cover, s)
	}
	const runs = 400
	in := 0
	for i := 0; i < runs; i++ {
		res, err := p.Release(ex)
		if err != nil {
			t.Fatal(err)
		}
		if d := res.Rows[0][0].(int64) - truth; d >= -20 && d <= 20 {
			in++
		}
	}
	lo, hi := binomialBounds(runs, cover, 1e-4)
	if in < lo || in > hi {
		t.Errorf("%d of %d releases within ±20, want %d..%d (Binomial(%d, %.4f))", in, runs, lo, hi, runs, cover)
	}
	t.Logf("%d of %d within ±20 at ε=%g (exact coverage %.4f, bounds %d..%d)", in, runs, p.Opts.Epsilon, cover, lo, hi)
}

// TestAccuracyOverBudget: an accuracy the budget left cannot pay for is
// refused before the engine runs, free (no ledger entry), saying the best
// half-width the rest of the budget would buy.
func TestAccuracyOverBudget(t *testing.T) {
	svc, rec, led := ledgerService(t, 0.05)
	key := ledger.Key{Dataset: "people", Analyst: "a"}
	before := rec.calls()
	_, err := svc.Answer(context.Background(), "SELECT COUNT(*) AS n FROM people", Options{Accuracy: &Accuracy{All: 5}, Confidence: 0.95, Analyst: "a"})
	var exc *accounting.ExceededError
	if !errors.As(err, &exc) || !strings.Contains(err.Error(), "nothing charged") ||
		!strings.Contains(err.Error(), "the best the budget left would buy is ε≈0.05: n ±") {
		t.Fatalf("error = %v, want a free refusal with the best half-width", err)
	}
	if rec.calls() != before {
		t.Errorf("the engine ran %d statement(s) for an over-budget query", rec.calls()-before)
	}
	if st, err := led.Status(key); err != nil || st.Releases != 0 {
		t.Errorf("status after the refusal: %+v, %v; want no release", st, err)
	}
	// The accuracy the refusal named is bought by what is left.
	res, err := svc.Answer(context.Background(), "SELECT COUNT(*) AS n FROM people", Options{Accuracy: &Accuracy{All: 80}, Confidence: 0.95, Analyst: "a"})
	if err != nil {
		t.Fatalf("an accuracy the budget pays for was refused: %v", err)
	}
	if res.Cost.Epsilon > 0.05 || !strings.Contains(strings.Join(res.Notes, "\n"), "accuracy: asked at 95%: n (COUNT(*)) ±80") {
		t.Errorf("cost %+v, notes %q: want a charge within the budget and the accuracy's note", res.Cost, res.Notes)
	}
}

// TestReplanIsNewPlan: the search's Replan plans what NewPlanDelta plans.
func TestReplanIsNewPlan(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	for _, sql := range []string{
		"SELECT city, flag, COUNT(*) AS n, SUM(score) AS s, AVG(age) AS a FROM people GROUP BY city, flag",
		"SELECT COUNT(*) AS n FROM people",
		"SELECT id, COUNT(*) AS n FROM people GROUP BY id",
	} {
		p, err := svc.Prepare(sql, Options{Epsilon: 0.3, Delta: 1e-6, Confidence: 0.95, Analyst: "a"})
		if err != nil {
			t.Fatal(err)
		}
		table := p.Plan.Query.Base
		base, err := dpplan.NewPlanDelta(p.Plan.Query, table, 1, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		measureRest(base, p.decl) // as Prepare does
		re, err := base.Replan(table, 0.3, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(re.Releases, p.Plan.Releases) || !reflect.DeepEqual(re.Keys, p.Plan.Keys) || re.Hidden != p.Plan.Hidden ||
			re.Contribution != p.Plan.Contribution || re.BoundGroups != p.Plan.BoundGroups || !reflect.DeepEqual(re.Selection, p.Plan.Selection) {
			t.Errorf("%s: Replan differs from NewPlanDelta:\n%+v\n%+v", sql, re, p.Plan)
		}
	}
}
