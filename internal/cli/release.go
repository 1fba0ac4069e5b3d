package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// releaseMechanisms lists the mechanisms `dpstat release` knows, with the
// flags each one accepts besides the common ones.
var releaseMechanisms = map[string][]string{
	"laplace":             {"value", "sensitivity", "epsilon"},
	"geometric":           {"value", "sensitivity", "epsilon"},
	"gaussian":            {"value", "sensitivity", "epsilon", "delta"},
	"randomized-response": {"value", "epsilon", "p", "domain"},
	"exponential":         {"candidates", "scores", "sensitivity", "epsilon"},
	"report-noisy-max":    {"candidates", "scores", "sensitivity", "epsilon", "noise"},
}

// maxJSONCount bounds --count with --json, whose output is built in memory.
const maxJSONCount = 10_000_000

// commonReleaseFlags apply to every mechanism.
var commonReleaseFlags = []string{"count", "json", "confidence", "insecure-seed", "dataset", "analyst", "ledger"}

func mechanismNames() string {
	names := make([]string, 0, len(releaseMechanisms))
	for n := range releaseMechanisms {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

type releaseOptions struct {
	value        string
	sensitivity  float64
	epsilon      float64
	delta        float64
	p            float64
	domain       string
	candidates   string
	scores       string
	noise        string
	count        int
	json         bool
	confidence   float64
	insecureSeed uint64
	dataset      string
	analyst      string
	ledgerPath   string
}

func newReleaseCmd() *cobra.Command {
	var o releaseOptions
	cmd := &cobra.Command{
		Use:   "release MECHANISM [flags]",
		Short: "Release one statistic with a differentially private mechanism",
		Long: `Release one statistic, computed elsewhere, with calibrated noise.

Mechanisms:
  laplace              --value X --sensitivity D --epsilon E
  geometric            --value N (an integer) --sensitivity D (an integer) --epsilon E
  gaussian             --value X --sensitivity D (L2) --epsilon E --delta F
  randomized-response  --value yes|no with --epsilon E or --p P (1/2 < P < 1);
                       or k-ary: --domain a,b,c --value b --epsilon E
  exponential          --candidates a,b,c --scores 1,5,2 --sensitivity D --epsilon E
  report-noisy-max     as exponential, with --noise exponential|gumbel

The sensitivity defaults to 1. --count N prints N independent releases, one
per line (N releases of one value cost N times the privacy cost: this is for
teaching and auditing). --json prints the release with its scale, cost and a confidence
interval.

With --dataset, the cost of all the releases (--count times the cost of one)
is charged durably to that dataset's budget in the ledger before anything is
printed; a release that does not fit the budget is refused and nothing is
printed. Without --dataset nothing is recorded: the value is yours to account
for.`,
		Example: `  dpstat release laplace --value 3 --sensitivity 1 --epsilon 0.5
  dpstat release geometric --value 120 --epsilon 1 --json
  dpstat release gaussian --value 10 --epsilon 1 --delta 1e-5
  dpstat release randomized-response --value yes --epsilon 1
  dpstat release exponential --candidates a,b,c --scores 1,5,2 --epsilon 1
  dpstat release laplace --value 1234 --epsilon 0.5 --dataset clinic --analyst alice`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("release needs exactly one mechanism name (one of %s), got %d arguments", mechanismNames(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRelease(cmd, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.value, "value", "", "the true value to release (a number; an integer for geometric; yes|no or a domain element for randomized-response)")
	f.Float64Var(&o.sensitivity, "sensitivity", 1, "how much one person can change the value (L1; L2 for gaussian; of the scores for exponential and report-noisy-max)")
	f.Float64Var(&o.epsilon, "epsilon", 0, "privacy parameter ε > 0")
	f.Float64Var(&o.delta, "delta", 0, "privacy parameter δ in (0, 1), gaussian only")
	f.Float64Var(&o.p, "p", 0, "randomized-response: probability of answering truthfully, in (1/2, 1) (instead of --epsilon)")
	f.StringVar(&o.domain, "domain", "", "randomized-response: comma-separated possible values for k-ary randomized response")
	f.StringVar(&o.candidates, "candidates", "", "exponential, report-noisy-max: comma-separated candidate names")
	f.StringVar(&o.scores, "scores", "", "exponential, report-noisy-max: comma-separated scores, one per candidate")
	f.StringVar(&o.noise, "noise", "exponential", "report-noisy-max: exponential (permute-and-flip) or gumbel (= exponential mechanism)")
	f.IntVar(&o.count, "count", 1, "number of independent releases to print, one per line (for teaching and auditing)")
	f.BoolVar(&o.json, "json", false, "print JSON with the scale, cost and confidence interval")
	f.Float64Var(&o.confidence, "confidence", 0.95, "confidence level of the reported interval, in (0, 1)")
	f.Uint64Var(&o.insecureSeed, "insecure-seed", 0, "INSECURE: draw the noise from a seeded generator so the output is reproducible; provides no privacy")
	_ = f.MarkHidden("insecure-seed")
	f.StringVar(&o.dataset, "dataset", "", "charge the releases to this dataset's budget in the ledger before printing them (the budget must have been granted with dpstat budget grant)")
	f.StringVar(&o.analyst, "analyst", defaultAnalyst(), "with --dataset: whose budget is charged; the default is $USER, or \"default\" when it is unset")
	addLedgerFlag(cmd, &o.ledgerPath)
	return cmd
}

// releaseReport is the JSON form of a release.
type releaseReport struct {
	Mechanism         string          `json:"mechanism"`
	Value             json.RawMessage `json:"value,omitempty"`
	Values            json.RawMessage `json:"values,omitempty"`
	Scale             *float64        `json:"scale,omitempty"`
	Granularity       *float64        `json:"granularity,omitempty"`
	Sigma             *float64        `json:"sigma,omitempty"`
	P                 *float64        `json:"p,omitempty"`
	Q                 *float64        `json:"q,omitempty"`
	Noise             string          `json:"noise,omitempty"`
	Cost              accounting.Cost `json:"cost"`
	Confidence        float64         `json:"confidence"`
	IntervalHalfWidth *float64        `json:"interval_half_width,omitempty"`
	Interval          *[2]float64     `json:"interval,omitempty"`
	UtilityBound      *float64        `json:"utility_bound,omitempty"`
	InsecureSeed      *uint64         `json:"insecure_seed,omitempty"`
}

// releaser draws releases: draw appends one fresh release to dst, as text
// or as a JSON value (it fails only on input the builder already checked). numeric reports whether the releases are numbers, for
// which the report can state an interval around a single release.
type releaser struct {
	draw      func(dst []byte, asJSON bool) ([]byte, error)
	numeric   bool
	halfWidth float64
	hasHalfW  bool
	report    releaseReport
}

func runRelease(cmd *cobra.Command, name string, o releaseOptions) error {
	allowed, ok := releaseMechanisms[name]
	if !ok {
		return fmt.Errorf("unknown mechanism %q: want one of %s", name, mechanismNames())
	}
	if err := checkApplicableFlags(cmd.Flags(), name, allowed); err != nil {
		return err
	}
	if o.count < 1 {
		return fmt.Errorf("--count %d: want a positive number of releases", o.count)
	}
	if o.json && o.count > maxJSONCount {
		return fmt.Errorf("--count %d with --json: at most %d releases fit in one JSON document; use the text output (one release per line) for more", o.count, maxJSONCount)
	}
	if !(o.confidence > 0 && o.confidence < 1) {
		return fmt.Errorf("--confidence %v: want a number strictly between 0 and 1", o.confidence)
	}

	var src random.Source
	if cmd.Flags().Changed("insecure-seed") {
		src = random.NewInsecureSeeded(o.insecureSeed)
	} else {
		s := random.Borrow()
		defer random.Return(s)
		src = s
	}

	r, err := buildReleaser(cmd.Flags(), name, o, src)
	if err != nil {
		return err
	}
	r.report.Mechanism = name
	r.report.Confidence = o.confidence
	if cmd.Flags().Changed("insecure-seed") {
		seed := o.insecureSeed
		r.report.InsecureSeed = &seed
	}

	if o.dataset != "" {
		if cmd.Flags().Changed("insecure-seed") {
			return fmt.Errorf("--insecure-seed provides no privacy, so its releases cannot be charged to a budget: drop --dataset or --insecure-seed")
		}
		if err := chargeReleases(cmd, name, o, r.report.Cost); err != nil {
			return err
		}
	}

	w := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<16)
	if !o.json {
		buf := make([]byte, 0, 64)
		for i := 0; i < o.count; i++ {
			buf, err = r.draw(buf[:0], false)
			if err != nil {
				return err
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return w.Flush()
	}

	rep := r.report
	if r.hasHalfW {
		h := r.halfWidth
		rep.IntervalHalfWidth = &h
	}
	if o.count == 1 {
		v, err := r.draw(nil, true)
		if err != nil {
			return err
		}
		rep.Value = v
		if r.numeric && r.hasHalfW {
			x, err := strconv.ParseFloat(string(v), 64)
			if err == nil {
				rep.Interval = &[2]float64{x - r.halfWidth, x + r.halfWidth}
			}
		}
	} else {
		// One pre-built JSON array: much faster to encode than a slice of
		// a million separate values.
		vals := make([]byte, 0, 24*o.count+2)
		vals = append(vals, '[')
		for i := 0; i < o.count; i++ {
			if i > 0 {
				vals = append(vals, ',')
			}
			if vals, err = r.draw(vals, true); err != nil {
				return err
			}
		}
		rep.Values = append(vals, ']')
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return err
	}
	return w.Flush()
}

// checkApplicableFlags refuses flags that the mechanism would ignore, so
// that a mistyped command does not silently release with other parameters
// than the user meant.
// chargeReleases charges o.count releases of cost one (accounting.Repeat)
// to the ledger, synced to disk, before any of them is printed. The ledger
// gives the charge its request id.
func chargeReleases(cmd *cobra.Command, name string, o releaseOptions, one accounting.Cost) error {
	total, err := accounting.Repeat(one, o.count)
	if err != nil {
		return fmt.Errorf("--count %d releases of cost %v: %w", o.count, one, err)
	}
	l, err := openLedger(o.ledgerPath)
	if err != nil {
		return err
	}
	defer l.Close()
	desc := fmt.Sprintf("dpstat release %s", name)
	if o.count > 1 {
		desc += fmt.Sprintf(" (%d releases)", o.count)
	}
	key := ledger.Key{Dataset: o.dataset, Analyst: o.analyst}
	rec, err := l.Charge(cmd.Context(), ledger.Charge{Key: key, Description: desc, Cost: total})
	if err != nil {
		if errors.Is(err, ledger.ErrNoBudget) {
			return fmt.Errorf("no budget for analyst %q on dataset %q in %s: grant one with dpstat budget grant --dataset %s --analyst %s --epsilon E; nothing was released", o.analyst, o.dataset, l.Path(), o.dataset, o.analyst)
		}
		return fmt.Errorf("nothing was released: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "charged %s to %s/%s in %s; left ε=%s δ=%s\n", total.Display(rec.Rule), o.dataset, o.analyst, l.Path(), fmtNum(rec.Remaining.Epsilon), fmtNum(rec.Remaining.Delta))
	return nil
}

func checkApplicableFlags(fs *pflag.FlagSet, name string, allowed []string) error {
	ok := map[string]bool{}
	for _, n := range allowed {
		ok[n] = true
	}
	for _, n := range commonReleaseFlags {
		ok[n] = true
	}
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if err == nil && !ok[fl.Name] {
			err = fmt.Errorf("--%s does not apply to %s (its flags: --%s)", fl.Name, name, strings.Join(allowed, ", --"))
		}
	})
	return err
}

func checkEpsilon(o releaseOptions, fs *pflag.FlagSet) error {
	if !fs.Changed("epsilon") {
		return fmt.Errorf("--epsilon is required: the privacy parameter ε, a finite number > 0")
	}
	return checkPositive("epsilon", o.epsilon)
}

func checkPositive(flag string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("--%s %v: want a finite number > 0", flag, v)
	}
	return nil
}

func needValue(o releaseOptions, fs *pflag.FlagSet, what string) error {
	if !fs.Changed("value") {
		return fmt.Errorf("--value is required: %s", what)
	}
	return nil
}

func appendFloat(dst []byte, v float64) []byte { return strconv.AppendFloat(dst, v, 'g', -1, 64) }

func appendLabel(dst []byte, s string, asJSON bool) []byte {
	if asJSON {
		return strconv.AppendQuote(dst, s)
	}
	return append(dst, s...)
}

func ptr(v float64) *float64 { return &v }

func buildReleaser(fs *pflag.FlagSet, name string, o releaseOptions, src random.Source) (*releaser, error) {
	switch name {
	case "laplace":
		return buildLaplace(fs, o, src)
	case "geometric":
		return buildGeometric(fs, o, src)
	case "gaussian":
		return buildGaussian(fs, o, src)
	case "randomized-response":
		if fs.Changed("domain") {
			return buildKaryRR(fs, o, src)
		}
		return buildBinaryRR(fs, o, src)
	case "exponential", "report-noisy-max":
		return buildSelection(fs, name, o, src)
	}
	return nil, fmt.Errorf("unknown mechanism %q: want one of %s", name, mechanismNames())
}

// finiteValueAndEpsilon reads what the mechanisms on real values need
// first: --value, a finite number, and --epsilon.
func finiteValueAndEpsilon(fs *pflag.FlagSet, o releaseOptions) (float64, error) {
	if err := needValue(o, fs, "the true value, a finite number"); err != nil {
		return 0, err
	}
	x, err := parseFiniteValue(o.value)
	if err != nil {
		return 0, err
	}
	return x, checkEpsilon(o, fs)
}

// realReleaser releases x, a real value, through a mechanism's release,
// with the mechanism's interval half-width and report.
func realReleaser(x float64, release func(float64) (float64, error), halfWidth float64, report releaseReport) *releaser {
	return &releaser{
		draw: func(dst []byte, _ bool) ([]byte, error) {
			v, err := release(x)
			return appendFloat(dst, v), err
		},
		numeric:   true,
		halfWidth: halfWidth,
		hasHalfW:  true,
		report:    report,
	}
}

func parseFiniteValue(s string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("--value %q: want a finite number", s)
	}
	return x, nil
}

func buildLaplace(fs *pflag.FlagSet, o releaseOptions, src random.Source) (*releaser, error) {
	x, err := finiteValueAndEpsilon(fs, o)
	if err != nil {
		return nil, err
	}
	if err := checkPositive("sensitivity", o.sensitivity); err != nil {
		return nil, err
	}
	m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: o.epsilon, Sensitivity: o.sensitivity, Source: src})
	if err != nil {
		return nil, err
	}
	return realReleaser(x, m.Release, m.Interval(o.confidence), releaseReport{Scale: ptr(m.Scale()), Granularity: ptr(m.Granularity()), Cost: m.Cost()}), nil
}

func buildGeometric(fs *pflag.FlagSet, o releaseOptions, src random.Source) (*releaser, error) {
	if err := needValue(o, fs, "the true value, an integer"); err != nil {
		return nil, err
	}
	x, err := strconv.ParseInt(strings.TrimSpace(o.value), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("--value %q: geometric releases integers; want an integer in [%d, %d]", o.value, int64(math.MinInt64), int64(math.MaxInt64))
	}
	if err := checkEpsilon(o, fs); err != nil {
		return nil, err
	}
	s := o.sensitivity
	if math.IsNaN(s) || s < 1 || s != math.Trunc(s) || s >= math.MaxInt64 {
		return nil, fmt.Errorf("--sensitivity %v: geometric needs a positive integer sensitivity", s)
	}
	m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: o.epsilon, Sensitivity: int64(s), Source: src})
	if err != nil {
		return nil, err
	}
	return &releaser{
		draw: func(dst []byte, _ bool) ([]byte, error) {
			return strconv.AppendInt(dst, m.Release(x), 10), nil
		},
		numeric:   true,
		halfWidth: m.Interval(o.confidence),
		hasHalfW:  true,
		report:    releaseReport{Scale: ptr(m.Scale()), Cost: m.Cost()},
	}, nil
}

func buildGaussian(fs *pflag.FlagSet, o releaseOptions, src random.Source) (*releaser, error) {
	x, err := finiteValueAndEpsilon(fs, o)
	if err != nil {
		return nil, err
	}
	if !fs.Changed("delta") {
		return nil, fmt.Errorf("--delta is required for gaussian: a probability in (0, 1), typically much smaller than 1/n")
	}
	if !(o.delta > 0 && o.delta < 1) {
		return nil, fmt.Errorf("--delta %v: want a number strictly between 0 and 1", o.delta)
	}
	if err := checkPositive("sensitivity", o.sensitivity); err != nil {
		return nil, err
	}
	m, err := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: o.epsilon, Delta: o.delta, Sensitivity: o.sensitivity, Source: src})
	if err != nil {
		return nil, err
	}
	return realReleaser(x, m.Release, m.Interval(o.confidence), releaseReport{Sigma: ptr(m.Sigma()), Granularity: ptr(m.Granularity()), Cost: m.Cost()}), nil
}

func buildBinaryRR(fs *pflag.FlagSet, o releaseOptions, src random.Source) (*releaser, error) {
	if err := needValue(o, fs, "yes or no (or a --domain element for k-ary randomized response)"); err != nil {
		return nil, err
	}
	var truth bool
	switch strings.ToLower(strings.TrimSpace(o.value)) {
	case "yes":
		truth = true
	case "no":
		truth = false
	default:
		return nil, fmt.Errorf("--value %q: binary randomized response takes yes or no (use --domain for other values)", o.value)
	}
	opts := mechanism.BinaryRROptions{Source: src}
	switch {
	case fs.Changed("epsilon") && fs.Changed("p"):
		return nil, fmt.Errorf("--epsilon %v and --p %v: give only one of them (p = e^ε/(1+e^ε))", o.epsilon, o.p)
	case fs.Changed("p"):
		if !(o.p > 0.5 && o.p < 1) {
			return nil, fmt.Errorf("--p %v: want a probability strictly between 1/2 and 1", o.p)
		}
		opts.P = o.p
	case fs.Changed("epsilon"):
		if err := checkPositive("epsilon", o.epsilon); err != nil {
			return nil, err
		}
		opts.Epsilon = o.epsilon
	default:
		return nil, fmt.Errorf("--epsilon or --p is required: ε > 0, or the probability p in (1/2, 1) of answering truthfully")
	}
	m, err := mechanism.NewBinaryRR(opts)
	if err != nil {
		return nil, err
	}
	return &releaser{
		draw: func(dst []byte, asJSON bool) ([]byte, error) {
			if m.Randomize(truth) {
				return appendLabel(dst, "yes", asJSON), nil
			}
			return appendLabel(dst, "no", asJSON), nil
		},
		report: releaseReport{P: ptr(m.P()), Cost: m.Cost()},
	}, nil
}

// splitList splits a comma-separated flag value, trimming spaces.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// checkNames refuses empty and duplicate names in a list flag.
func checkNames(flag string, names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("--%s is empty: want a comma-separated list of at least one name", flag)
	}
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("--%s: element %d is empty", flag, i+1)
		}
		if seen[n] {
			return fmt.Errorf("--%s: %q appears twice; names must be distinct", flag, n)
		}
		seen[n] = true
	}
	return nil
}

func buildKaryRR(fs *pflag.FlagSet, o releaseOptions, src random.Source) (*releaser, error) {
	domain := splitList(o.domain)
	if err := checkNames("domain", domain); err != nil {
		return nil, err
	}
	if len(domain) < 2 {
		return nil, fmt.Errorf("--domain %q: want at least two values", o.domain)
	}
	if err := needValue(o, fs, "one of the --domain values"); err != nil {
		return nil, err
	}
	v := -1
	for i, d := range domain {
		if d == strings.TrimSpace(o.value) {
			v = i
		}
	}
	if v < 0 {
		return nil, fmt.Errorf("--value %q is not in --domain %q", o.value, o.domain)
	}
	if fs.Changed("p") {
		return nil, fmt.Errorf("--p %v: k-ary randomized response is set by --epsilon", o.p)
	}
	if err := checkEpsilon(o, fs); err != nil {
		return nil, err
	}
	m, err := mechanism.NewKaryRR(mechanism.KaryRROptions{Epsilon: o.epsilon, K: len(domain), Source: src})
	if err != nil {
		return nil, err
	}
	return &releaser{
		draw: func(dst []byte, asJSON bool) ([]byte, error) {
			out, err := m.Randomize(v)
			if err != nil {
				return dst, err
			}
			return appendLabel(dst, domain[out], asJSON), nil
		},
		report: releaseReport{P: ptr(m.P()), Q: ptr(m.Q()), Cost: m.Cost()},
	}, nil
}

func buildSelection(fs *pflag.FlagSet, name string, o releaseOptions, src random.Source) (*releaser, error) {
	cands := splitList(o.candidates)
	if err := checkNames("candidates", cands); err != nil {
		return nil, err
	}
	rawScores := splitList(o.scores)
	if len(rawScores) != len(cands) {
		return nil, fmt.Errorf("--scores %q has %d scores for %d --candidates: give one score per candidate", o.scores, len(rawScores), len(cands))
	}
	scores := make([]float64, len(rawScores))
	for i, s := range rawScores {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("--scores: score %d (%q, for %q) is not a finite number", i+1, s, cands[i])
		}
		scores[i] = x
	}
	if err := checkEpsilon(o, fs); err != nil {
		return nil, err
	}
	if err := checkPositive("sensitivity", o.sensitivity); err != nil {
		return nil, err
	}
	var (
		sel  func([]float64) (int, error)
		cost accounting.Cost
		rep  releaseReport
	)
	if name == "exponential" {
		m, err := mechanism.NewExponential(mechanism.ExponentialOptions{Epsilon: o.epsilon, Sensitivity: o.sensitivity, Source: src})
		if err != nil {
			return nil, err
		}
		sel, cost = m.Select, m.Cost()
		rep.UtilityBound = ptr(m.UtilityBound(len(cands), 1-o.confidence))
	} else {
		var noise mechanism.NoisyMaxNoise
		switch strings.ToLower(o.noise) {
		case "exponential":
			noise = mechanism.ExponentialNoise
		case "gumbel":
			noise = mechanism.GumbelNoise
		default:
			return nil, fmt.Errorf("--noise %q: want exponential or gumbel", o.noise)
		}
		m, err := mechanism.NewReportNoisyMax(mechanism.NoisyMaxOptions{Epsilon: o.epsilon, Sensitivity: o.sensitivity, Noise: noise, Source: src})
		if err != nil {
			return nil, err
		}
		sel, cost = m.Select, m.Cost()
		rep.Noise = strings.ToLower(o.noise)
		rep.UtilityBound = ptr(m.UtilityBound(len(cands), 1-o.confidence))
	}
	rep.Cost = cost
	return &releaser{
		draw: func(dst []byte, asJSON bool) ([]byte, error) {
			i, err := sel(scores)
			if err != nil {
				return dst, fmt.Errorf("--scores %q: %v", o.scores, err)
			}
			return appendLabel(dst, cands[i], asJSON), nil
		},
		report: rep,
	}, nil
}
