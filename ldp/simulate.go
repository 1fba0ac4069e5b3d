package ldp

import (
	"fmt"
	"math"
	"sync"

	"github.com/dpstat/dpstat/random"
)

// SimulateOptions configures Simulate.
type SimulateOptions struct {
	// Population gives the number of people holding each value; its length
	// is the oracle's domain.
	Population []int64
	// Workers is the number of goroutines (at least 1; 0 means 1).
	Workers int
	// InsecureSeed, if non-nil, makes the simulation reproducible with
	// seeded sources (worker w uses seed + w); nil uses secure sources.
	InsecureSeed *uint64
}

// MaxSimulated bounds the number of simulated reports, 2^31.
const MaxSimulated = 1 << 31

// Simulate randomizes the report of every person of the population and
// returns the aggregated tally, as a collector would see it. It is for
// choosing a mechanism and teaching; the estimates it leads to are as
// private as real reports.
func Simulate(o FrequencyOracle, so SimulateOptions) (Tally, error) {
	d := o.Params().Domain
	if len(so.Population) != d {
		return Tally{}, fmt.Errorf("ldp simulate: population has %d values: want %d, the domain", len(so.Population), d)
	}
	var total int64
	for v, c := range so.Population {
		if c < 0 || c > MaxSimulated || total+c > MaxSimulated {
			return Tally{}, fmt.Errorf("ldp simulate: population[%d] = %d: want counts >= 0 adding up to at most 2^31", v, c)
		}
		total += c
	}
	if total == 0 {
		return Tally{}, fmt.Errorf("ldp simulate: empty population: want at least one person")
	}
	w := max(so.Workers, 1)
	tallies := make([]Tally, w)
	errs := make([]error, w)
	var wg sync.WaitGroup
	for k := range w {
		lo, hi := total*int64(k)/int64(w), total*int64(k+1)/int64(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var src random.Source
			if so.InsecureSeed != nil {
				src = random.NewInsecureSeeded(*so.InsecureSeed + uint64(k))
			} else {
				src = random.NewSecure()
			}
			a := o.NewAggregator()
			// Person i holds the value whose cumulative count passes i.
			v, cum := 0, so.Population[0]
			for i := lo; i < hi; i++ {
				for i >= cum {
					v++
					cum += so.Population[v]
				}
				r, err := o.Randomize(src, v)
				if err == nil {
					err = a.Add(r)
				}
				if err != nil {
					errs[k] = err
					return
				}
			}
			tallies[k] = a.Tally()
		}()
	}
	wg.Wait()
	out := Tally{Counts: make([]int64, o.Params().TallySize())}
	for k := range w {
		if errs[k] != nil {
			return Tally{}, errs[k]
		}
		if err := mergeTally(&out, tallies[k]); err != nil {
			return Tally{}, err
		}
	}
	return out, nil
}

// Zipf returns n people over d values with counts proportional to
// 1/(v+1)^s (largest remainders get the leftover people, so the counts add
// up to n exactly).
func Zipf(n int64, d int, s float64) []int64 {
	w := make([]float64, d)
	sum := 0.0
	for v := range w {
		w[v] = math.Pow(float64(v+1), -s)
		sum += w[v]
	}
	return apportion(n, w, sum)
}

// Uniform returns n people spread as evenly as possible over d values.
func Uniform(n int64, d int) []int64 {
	out := make([]int64, d)
	for v := range out {
		out[v] = n / int64(d)
		if int64(v) < n%int64(d) {
			out[v]++
		}
	}
	return out
}

func apportion(n int64, w []float64, sum float64) []int64 {
	out := make([]int64, len(w))
	var used int64
	for v := range w {
		out[v] = int64(math.Floor(float64(n) * w[v] / sum))
		used += out[v]
	}
	for v := 0; used < n; v = (v + 1) % len(w) {
		out[v]++
		used++
	}
	return out
}
