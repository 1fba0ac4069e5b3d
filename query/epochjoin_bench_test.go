package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/ledger"
)

// BenchmarkEpochJoin measures a join of two private tables of one id
// space on DuckDB (200,000 visits and 100,000 payments of 20,000 people
// over 2024, from a fixed seed), equating the persons and the months:
// "epochs" on tables with monthly epochs (each table capped per (person,
// month) before the join, bounding per (person, month), charged in 12
// months), "plain" on the same tables without epochs (capped and bounded
// per person, charged once). Each run is a fresh run at its own ε.
func BenchmarkEpochJoin(b *testing.B) {
	dir := b.TempDir()
	r := rand.New(rand.NewPCG(7, 11))
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(name string, n int) {
		var s strings.Builder
		s.WriteString("pid,day,amount\n")
		for range n {
			fmt.Fprintf(&s, "%d,%s,%d\n", r.IntN(20000), start.AddDate(0, 0, r.IntN(366)).Format("2006-01-02"), r.IntN(100))
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("visits.csv", 200000)
	write("payments.csv", 100000)
	const sql = "SELECT COUNT(*), SUM(p.amount) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.day)"
	for _, variant := range []string{"epochs", "plain"} {
		b.Run(variant, func(b *testing.B) {
			epochDecl := ""
			if variant == "epochs" {
				epochDecl = "    epoch: {column: day, every: month}\n"
			}
			var decl strings.Builder
			decl.WriteString("budget: {epsilon: 1e30}\ntables:\n")
			for _, t := range []string{"visits", "payments"} {
				fmt.Fprintf(&decl, "  %s:\n    source: %s.csv\n    privacy_unit: pid\n    id_space: people\n    max_groups_per_unit: 1\n    max_rows_per_group: 4\n%s", t, t, epochDecl)
				decl.WriteString("    columns:\n      pid: {type: int}\n      day: {type: date, lower: 2024-01-01, upper: 2024-12-31}\n      amount: {type: int, lower: 0, upper: 100}\n")
			}
			cat, err := catalog.Parse([]byte(decl.String()), dir)
			if err != nil {
				b.Fatal(err)
			}
			eng, err := engine.Open(context.Background(), engines.Spec(cat))
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			led, err := ledger.Open(filepath.Join(b.TempDir(), "l.db"), ledger.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer led.Close()
			svc, err := NewService(context.Background(), cat, eng, led)
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				if _, err := svc.Answer(context.Background(), sql, Options{Epsilon: 1 + float64(i)/1024, Confidence: 0.95, Analyst: "a", Fresh: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
