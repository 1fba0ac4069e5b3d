package query

import (
	"context"
	"math"
	"reflect"
	"testing"
)

// TestReconciledAnswers: overlapping releases (a table by sex and race,
// and its total) are reconciled by least squares, so that answers derived
// from them agree (the total is the sum of its parts), name both
// releases, carry the least-squares variance, and are exact at ε = 1e20.
func TestReconciledAnswers(t *testing.T) {
	ctx := context.Background()
	rows := reuseRows(400)
	fine := "SELECT sex, race, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY sex, race"
	total := "SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult"
	bySex := "SELECT sex, SUM(hours) AS h, COUNT(*) AS n FROM adult GROUP BY sex"
	rollUp := "SELECT SUM(hours) AS h, COUNT(*) AS n FROM adult"
	for _, eps := range []float64{1e20, 1} {
		svc, _, led, _ := reuseService(t, rows, "")
		for _, sql := range []string{fine, total} {
			if _, err := svc.Answer(ctx, sql, Options{Epsilon: eps, Confidence: 0.95, Analyst: "ann", Fresh: true}); err != nil {
				t.Fatal(err)
			}
		}
		charged := releases(t, led)
		parts, err := svc.Answer(ctx, bySex, accuracyOpts("ann", 1e6))
		if err != nil {
			t.Fatal(err)
		}
		whole, err := svc.Answer(ctx, rollUp, accuracyOpts("ann", 1e6))
		if err != nil {
			t.Fatal(err)
		}
		if parts.Derived == nil || whole.Derived == nil || releases(t, led) != charged {
			t.Fatalf("ε=%g: not derived at no cost: %v %v", eps, parts.Derived, whole.Derived)
		}
		n, s := reuseTruth(rows, func(reuseRow) bool { return true })
		if eps == 1e20 {
			if whole.Rows[0][1] != n || math.Abs(whole.Rows[0][0].(float64)-s) > 1e-6 {
				t.Errorf("ε=1e20: total %v, want %d, %v", whole.Rows[0], n, s)
			}
			for _, row := range parts.Rows {
				pn, ps := reuseTruth(rows, func(r reuseRow) bool { return r.sex == row[0] })
				if row[2] != pn || math.Abs(row[1].(float64)-ps) > 1e-6 {
					t.Errorf("ε=1e20: %v, want %d, %v", row, pn, ps)
				}
			}
			continue
		}
		if want := []uint64{1, 2}; !reflect.DeepEqual(whole.Derived.Releases, want) || !reflect.DeepEqual(parts.Derived.Releases, want) {
			t.Errorf("derived from %v and %v, want %v", parts.Derived.Releases, whole.Derived.Releases, want)
		}
		sum := 0.0
		for _, row := range parts.Rows {
			sum += row[1].(float64)
		}
		if h := whole.Rows[0][0].(float64); math.Abs(sum-h) > 1e-9*math.Abs(h) {
			t.Errorf("the parts sum to %v, the total is %v", sum, h)
		}
		// The total's variance is below the fresh total's (release 2)
		// and the sum of the fine cells', and its interval is at least
		// 1.96 standard deviations wide.
		v := whole.Derived.Variances[0][0]
		ci := whole.CI[0][0]
		if !(v > 0) || (ci.High-ci.Low)/2 < 1.96*math.Sqrt(v)*(1-1e-9) {
			t.Errorf("variance %v, interval %v", v, *ci)
		}
		alone, err := svc.Answer(ctx, total, Options{Epsilon: eps, Confidence: 0.95, Analyst: "ann", Fresh: true})
		if err != nil {
			t.Fatal(err)
		}
		if aci := alone.CI[0][1]; !((ci.High - ci.Low) < (aci.High - aci.Low)) {
			t.Errorf("the reconciled total's interval %v is not narrower than the release's %v", *ci, *aci)
		}
	}
}
