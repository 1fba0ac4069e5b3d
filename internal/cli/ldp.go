package cli

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/collector"
	"github.com/dpstat/dpstat/ldp"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

func newLdpCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ldp",
		Short: "Local differential privacy: simulate randomizers, compare with central DP, read a collector's estimates",
		Long: `Local differential privacy: each person randomizes their own answer on their
device, and the collector only ever sees noisy reports.

  dpstat ldp simulate   simulate N reports of a mechanism and compare estimates with the truth
  dpstat ldp compare    local randomized response against the central Laplace mechanism
  dpstat ldp estimate   estimates with intervals from a collector store`,
	}
	cmd.AddCommand(newLdpSimulateCmd(), newLdpCompareCmd(), newLdpEstimateCmd())
	return cmd
}

type simulateOptions struct {
	mechanism    string
	epsilon      float64
	domain       int
	n            int64
	distribution string
	top          int
	confidence   float64
	insecureSeed uint64
}

func newLdpSimulateCmd() *cobra.Command {
	var o simulateOptions
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate N locally private reports and compare the estimates with the true frequencies",
		Long: `Simulate N people, each holding one of --domain values (0 … domain−1) drawn
from --distribution, each sending one ε-LDP report, and print the estimated
against the true frequencies (the --top most frequent values), the mean
absolute error over all values and the theoretical standard error.

Mechanisms: rr (binary randomized response, domain 2), krr (k-ary randomized
response), oue (optimized unary encoding), olh (optimized local hashing), sue
(symmetric unary encoding, basic RAPPOR), hr (Hadamard randomized response),
auto (the one with the least variance for ε and the domain).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var seed *uint64
			if cmd.Flags().Changed("insecure-seed") {
				seed = &o.insecureSeed
			}
			return runSimulate(cmd.OutOrStdout(), o, seed)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.mechanism, "mechanism", "auto", "rr, krr, oue, olh, sue, hr or auto")
	f.Float64Var(&o.epsilon, "epsilon", 1, "local privacy parameter ε > 0 of each report")
	f.IntVar(&o.domain, "domain", 100, "number of values")
	f.Int64Var(&o.n, "n", 100000, "number of simulated people (at most 2^31)")
	f.StringVar(&o.distribution, "distribution", "zipf", "distribution of the true values: uniform or zipf (s = 1.1)")
	f.IntVar(&o.top, "top", 10, "number of rows to print (most frequent values first)")
	f.Float64Var(&o.confidence, "confidence", 0.95, "confidence of the printed intervals, in (0, 1)")
	f.Uint64Var(&o.insecureSeed, "insecure-seed", 0, "seed a deterministic, INSECURE random source (reproducible demos only)")
	return cmd
}

func pickKind(name string, eps float64, d int) (ldp.Kind, error) {
	switch strings.ToLower(name) {
	case "auto":
		k, _, err := ldp.Recommend(eps, d)
		return k, err
	}
	k, err := ldp.ParseKind(name)
	if err != nil {
		return "", fmt.Errorf("--mechanism %q: want one of rr, krr, oue, olh, sue, hr, auto", name)
	}
	if k == ldp.KindMean {
		return "", fmt.Errorf("--mechanism mean: simulate compares frequencies; want one of rr, krr, oue, olh, sue, hr, auto")
	}
	return k, nil
}

func kindTitle(k ldp.Kind) string {
	switch k {
	case ldp.KindRR:
		return "binary randomized response"
	case ldp.KindKRR:
		return "k-ary randomized response"
	case ldp.KindOUE:
		return "optimized unary encoding"
	case ldp.KindOLH:
		return "optimized local hashing"
	case ldp.KindSUE:
		return "symmetric unary encoding"
	case ldp.KindHR:
		return "Hadamard randomized response"
	case ldp.KindMean:
		return "Duchi et al. mean"
	}
	return string(k)
}

func checkConfidence(c float64) error {
	if math.IsNaN(c) || !(c > 0 && c < 1) {
		return fmt.Errorf("--confidence = %v: want a number in (0, 1)", c)
	}
	return nil
}

func runSimulate(w io.Writer, o simulateOptions, seed *uint64) error {
	if err := checkConfidence(o.confidence); err != nil {
		return err
	}
	if o.n < 1 || o.n > ldp.MaxSimulated {
		return fmt.Errorf("--n = %d: want a number of people in [1, 2^31]", o.n)
	}
	if o.top < 0 {
		return fmt.Errorf("--top = %d: want a number of rows >= 0", o.top)
	}
	kind, err := pickKind(o.mechanism, o.epsilon, o.domain)
	if err != nil {
		return err
	}
	oracle, err := ldp.New(ldp.Options{Mechanism: kind, Epsilon: o.epsilon, Domain: o.domain})
	if err != nil {
		return err
	}
	var pop []int64
	switch strings.ToLower(o.distribution) {
	case "uniform":
		pop = ldp.Uniform(o.n, o.domain)
	case "zipf":
		pop = ldp.Zipf(o.n, o.domain, 1.1)
	default:
		return fmt.Errorf("--distribution %q: want uniform or zipf", o.distribution)
	}
	t, err := ldp.Simulate(oracle, ldp.SimulateOptions{Population: pop, Workers: runtime.GOMAXPROCS(0), InsecureSeed: seed})
	if err != nil {
		return err
	}
	est, err := ldp.Estimates(oracle, t)
	if err != nil {
		return err
	}
	p := oracle.Params()
	fmt.Fprintf(w, "mechanism %s (%s), ε = %.6g, domain %d, n = %d, %s distribution\n", kind, kindTitle(kind), p.Epsilon, o.domain, o.n, strings.ToLower(o.distribution))
	// Decimals a person reads: the shortest that round-trip to the exact
	// float64 the randomizer uses (the JSON of the survey also has hex).
	fmt.Fprintf(w, "exact probabilities: p = %s, q = %s", strconv.FormatFloat(p.P.Value, 'g', -1, 64), strconv.FormatFloat(p.Q.Value, 'g', -1, 64))
	if p.G > 0 {
		fmt.Fprintf(w, ", g = %d", p.G)
	}
	if p.Rows > 0 {
		fmt.Fprintf(w, ", %d Hadamard rows", p.Rows)
	}
	fmt.Fprintln(w)
	if seed != nil {
		fmt.Fprintln(w, "WARNING: --insecure-seed makes the randomness predictable; for demonstrations only")
	}
	order := make([]int, o.domain)
	for v := range order {
		order[v] = v
	}
	sort.SliceStable(order, func(i, j int) bool { return pop[order[i]] > pop[order[j]] })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "value\ttrue\testimate\t%g%% interval\t\n", 100*o.confidence)
	for _, v := range order[:min(o.top, o.domain)] {
		lo, hi := est[v].Interval(o.confidence)
		fmt.Fprintf(tw, "%d\t%.5f\t%.5f\t[%.5f, %.5f]\t\n", v, float64(pop[v])/float64(o.n), round5(est[v].Value), round5(lo), round5(hi))
	}
	tw.Flush()
	mae := 0.0
	for v, e := range est {
		mae += math.Abs(e.Value - float64(pop[v])/float64(o.n))
	}
	mae /= float64(o.domain)
	se := math.Sqrt(oracle.Variance(o.n, 0))
	fmt.Fprintf(w, "mean absolute error over %d values: %.6f\n", o.domain, mae)
	fmt.Fprintf(w, "theoretical standard error (rare value): %.6f (a mean absolute error near %.6f = √(2/π)·SE is expected)\n", se, se*math.Sqrt(2/math.Pi))
	return nil
}

// round5 rounds to 5 decimals for display, so that a tiny negative value
// prints as 0.00000 rather than -0.00000.
func round5(x float64) float64 { return math.Round(x*1e5)/1e5 + 0 }

type compareOptions struct {
	epsilon      float64
	n            int64
	trials       int
	fraction     float64
	insecureSeed uint64
}

func newLdpCompareCmd() *cobra.Command {
	var o compareOptions
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Compare the error of local randomized response with the central Laplace mechanism",
		Long: `Estimate how many of N people answer "yes" (a fraction --fraction of them do)
in two settings with the same ε:

  local    every person sends one binary randomized response report; the
           collector's count estimate has standard deviation
           √(N·p(1−p))/(2p−1), growing like √N/ε
  central  a trusted curator counts exactly and adds discrete Laplace noise of
           scale 1/ε (sensitivity 1): standard deviation √2/ε, whatever N is

Both are simulated --trials times at N/100, N/10 and N; the table shows the
theoretical and the simulated root-mean-square error of the count.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var seed *uint64
			if cmd.Flags().Changed("insecure-seed") {
				seed = &o.insecureSeed
			}
			return runCompare(cmd.OutOrStdout(), o, seed)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.epsilon, "epsilon", 1, "privacy parameter ε > 0")
	f.Int64Var(&o.n, "n", 100000, "number of people (100 to 10^8)")
	f.IntVar(&o.trials, "trials", 20, "simulated repetitions per setting (1 to 10000)")
	f.Float64Var(&o.fraction, "fraction", 0.3, "true fraction of people answering yes, in [0, 1]")
	f.Uint64Var(&o.insecureSeed, "insecure-seed", 0, "seed a deterministic, INSECURE random source (reproducible demos only)")
	return cmd
}

func runCompare(w io.Writer, o compareOptions, seed *uint64) error {
	if o.n < 100 || o.n > 100_000_000 {
		return fmt.Errorf("--n = %d: want a number of people in [100, 10^8]", o.n)
	}
	if o.trials < 1 || o.trials > 10000 {
		return fmt.Errorf("--trials = %d: want a number in [1, 10000]", o.trials)
	}
	if math.IsNaN(o.fraction) || o.fraction < 0 || o.fraction > 1 {
		return fmt.Errorf("--fraction = %v: want a number in [0, 1]", o.fraction)
	}
	var src random.Source = random.Shared{}
	if seed != nil {
		src = random.NewInsecureSeeded(*seed)
	}
	rr, err := ldp.New(ldp.Options{Mechanism: ldp.KindRR, Epsilon: o.epsilon, Domain: 2})
	if err != nil {
		return fmt.Errorf("--epsilon: %w", err)
	}
	geo, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: o.epsilon, Sensitivity: 1, Source: src})
	if err != nil {
		return fmt.Errorf("--epsilon: %w", err)
	}
	p := rr.Params().P.Value
	fmt.Fprintf(w, "counting \"yes\" (true fraction %.3g) at ε = %.6g, %d trials per row\n", o.fraction, o.epsilon, o.trials)
	if seed != nil {
		fmt.Fprintln(w, "WARNING: --insecure-seed makes the randomness predictable; for demonstrations only")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "N\tlocal RR theory\tlocal RR simulated\tcentral Laplace theory\tcentral Laplace simulated\tratio (theory)\t\n")
	for _, n := range []int64{o.n / 100, o.n / 10, o.n} {
		yes := int64(math.Round(o.fraction * float64(n)))
		pop := []int64{n - yes, yes}
		var sqL, sqC float64
		for range o.trials {
			var ts *uint64
			if seed != nil {
				s := src.Uint64()
				ts = &s
			}
			t, err := ldp.Simulate(rr, ldp.SimulateOptions{Population: pop, Workers: runtime.GOMAXPROCS(0), InsecureSeed: ts})
			if err != nil {
				return err
			}
			est, err := ldp.Estimates(rr, t)
			if err != nil {
				return err
			}
			d := est[1].Value*float64(n) - float64(yes)
			sqL += d * d
			c := float64(geo.Release(yes) - yes)
			sqC += c * c
		}
		thL := math.Sqrt(float64(n)*p*(1-p)) / (2*p - 1)
		b := geo.Scale()
		thC := math.Sqrt(2*math.Exp(-1/b)) / (1 - math.Exp(-1/b))
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.2f\t%.2f\t%.0f×\t\n", n, thL, math.Sqrt(sqL/float64(o.trials)), thC, math.Sqrt(sqC/float64(o.trials)), thL/thC)
	}
	tw.Flush()
	fmt.Fprintln(w, "root-mean-square error of the count, in people: local grows like √N/ε, central stays O(1/ε)")
	return nil
}

type estimateOptions struct {
	store      string
	survey     string
	confidence float64
}

func newLdpEstimateCmd() *cobra.Command {
	var o estimateOptions
	cmd := &cobra.Command{
		Use:   "estimate --store PATH --survey ID",
		Short: "Print a survey's estimates with intervals from a collector store",
		Long: `Print the estimates of one survey from a collector store (see dpstat collect):
the frequency of every value, or the mean, with its standard error and
interval. The store must not be open in a running collector; ask the running
collector instead: GET /api/surveys/ID/estimates.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEstimate(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.store, "store", "", "collector store file (required)")
	f.StringVar(&o.survey, "survey", "", "survey id (required)")
	f.Float64Var(&o.confidence, "confidence", 0.95, "confidence of the intervals, in (0, 1)")
	return cmd
}

func runEstimate(w io.Writer, o estimateOptions) error {
	if o.store == "" {
		return fmt.Errorf("--store is required: the collector's store file")
	}
	if o.survey == "" {
		return fmt.Errorf("--survey is required: the survey id")
	}
	if err := checkConfidence(o.confidence); err != nil {
		return err
	}
	st, err := collector.Open(o.store, collector.StoreOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := st.Estimates(o.survey, o.confidence)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "survey %s: %s\n", r.Survey.ID, r.Survey.Question)
	fmt.Fprintf(w, "mechanism %s (%s), ε = %.6g, %d reports\n", r.Survey.Mechanism, kindTitle(r.Survey.Mechanism), r.Epsilon, r.N)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "value\testimate\tstd. error\t%g%% interval\t\n", 100*o.confidence)
	for _, e := range r.Estimates {
		fmt.Fprintf(tw, "%s\t%.5f\t%.5f\t[%.5f, %.5f]\t\n", e.Label, round5(e.Estimate), e.StdError, round5(e.Lo), round5(e.Hi))
	}
	return tw.Flush()
}
