package ldp

import (
	"testing"

	"github.com/dpstat/dpstat/random"
)

func benchReports(b *testing.B, o FrequencyOracle, n int) []Report {
	b.Helper()
	src := random.NewInsecureSeeded(1)
	d := o.Params().Domain
	rs := make([]Report, n)
	for i := range rs {
		r, err := o.Randomize(src, i%d)
		if err != nil {
			b.Fatal(err)
		}
		rs[i] = r
	}
	return rs
}

// BenchmarkAggregate measures aggregation on one core; reports/s is
// 1e9 / (ns/op).
func BenchmarkAggregate(b *testing.B) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"krr-d100", Options{KindKRR, 1, 100}},
		{"oue-d1024", Options{KindOUE, 1, 1024}},
		{"sue-d1024", Options{KindSUE, 1, 1024}},
		{"olh-d1024", Options{KindOLH, 1, 1024}},
		{"hr-d1024", Options{KindHR, 1, 1024}},
	} {
		b.Run(c.name, func(b *testing.B) {
			o, err := New(c.o)
			if err != nil {
				b.Fatal(err)
			}
			rs := benchReports(b, o, 4096)
			a := o.NewAggregator()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := a.Add(rs[i&4095]); err != nil {
					b.Fatal(err)
				}
			}
			_ = a.Tally()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
		})
	}
}

// BenchmarkRandomize measures one report with the secure pooled source.
func BenchmarkRandomize(b *testing.B) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"rr", Options{KindRR, 1, 2}},
		{"krr-d100", Options{KindKRR, 1, 100}},
		{"oue-d1024", Options{KindOUE, 1, 1024}},
		{"sue-d1024", Options{KindSUE, 1, 1024}},
		{"olh-d1024", Options{KindOLH, 1, 1024}},
		{"hr-d1024", Options{KindHR, 1, 1024}},
	} {
		b.Run(c.name, func(b *testing.B) {
			o, err := New(c.o)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				if _, err := o.Randomize(nil, i%c.o.Domain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("mean", func(b *testing.B) {
		m, _ := NewMean(MeanOptions{Epsilon: 1, Lo: 0, Hi: 100})
		for i := 0; i < b.N; i++ {
			if _, err := m.Randomize(nil, float64(i%100)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
