package dpplan

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// DroppedShare is the part of a query's ε that the estimate of the rows
// contribution bounding dropped takes, when the analyst asks for it.
const DroppedShare = 0.1

// DroppedCapFactor bounds what one person adds to the count of dropped
// rows: at most DroppedCapFactor times the rows they may keep.
const DroppedCapFactor = 3

// Dropped is the plan of the estimate of the rows contribution bounding
// drops: two noisy counts over the rows the query reads, of each person's
// rows kept (at most Groups·RowsPerGroup, the bounding's own limit) and of
// their rows beyond that (at most Cap per person), each with half of
// Epsilon and geometric noise. The statement that computes them clamps
// both per person (sqlgen.DroppedSQL), so the sensitivities hold whatever
// the data; the share dropped/(kept + dropped) is post-processing. It
// reads at most Cap dropped rows per person and at least the rows the
// bounding keeps, so it is at most the true share: a lower bound, up to
// the noise.
type Dropped struct {
	// Epsilon is the estimate's ε, taken from the query's.
	Epsilon float64
	// KeptMax is the most rows one person's kept count can have
	// (Groups·RowsPerGroup), Cap the most dropped rows counted per person
	// (DroppedCapFactor·KeptMax).
	KeptMax, Cap int64
	// RowsPerGroup is the cap of a person's rows in one group.
	RowsPerGroup int64
	// people is how many people are protected together (group_size).
	people        int64
	kept, dropped *mechanism.Geometric
}

// NewDropped plans the estimate for a bounded plan at ε = eps.
func (p *Plan) NewDropped(eps float64, src random.Source) (*Dropped, error) {
	c := p.Contribution
	keptMax := c.Groups * c.RowsPerGroup
	if keptMax <= 0 || keptMax > math.MaxInt64/(DroppedCapFactor*c.People()) {
		return nil, fmt.Errorf("query: contribution bounds %d × %d: too large for the dropped-rows estimate", c.Groups, c.RowsPerGroup)
	}
	d := &Dropped{Epsilon: eps, KeptMax: keptMax, Cap: DroppedCapFactor * keptMax, RowsPerGroup: c.RowsPerGroup, people: c.People()}
	var err error
	if d.kept, err = mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: eps / 2, Sensitivity: c.People() * keptMax, Source: src}); err != nil {
		return nil, err
	}
	if d.dropped, err = mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: eps / 2, Sensitivity: c.People() * d.Cap, Source: src}); err != nil {
		return nil, err
	}
	return d, nil
}

// Cost is what the estimate spends: its two counts, composed.
func (d *Dropped) Cost() (accounting.Cost, error) {
	return accounting.Sequential(d.kept.Cost(), d.dropped.Cost())
}

// Share is the estimate's part of the query's ε split.
func (d *Dropped) Share() Share {
	return Share{Column: "(rows dropped by bounding)", Epsilon: d.Epsilon, Mechanisms: []MechanismInfo{
		{Name: "geometric", Epsilon: d.Epsilon / 2, Sensitivity: float64(d.people * d.KeptMax), Scale: d.kept.Scale()},
		{Name: "geometric", Epsilon: d.Epsilon / 2, Sensitivity: float64(d.people * d.Cap), Scale: d.dropped.Scale()},
	}}
}

// DroppedEstimate is the released estimate: noisy counts and the share of
// the rows read that bounding dropped, with its interval.
type DroppedEstimate struct {
	// Share is dropped/(kept + dropped) from the noisy counts, in [0, 1];
	// Low and High its interval at Confidence.
	Share      float64 `json:"share"`
	Low        float64 `json:"low"`
	High       float64 `json:"high"`
	Confidence float64 `json:"confidence"`
	// Kept and Dropped are the noisy counts (dropped rows counted up to
	// Cap per person).
	Kept    int64 `json:"kept"`
	Dropped int64 `json:"dropped"`
	Cap     int64 `json:"cap_per_person"`
	// Epsilon is what the estimate cost, part of the query's charge.
	Epsilon float64 `json:"epsilon"`
}

// Release adds noise to the exact counts (kept rows, dropped rows, each
// already clamped per person by the statement) and computes the share and
// its interval: each count's interval holds with probability 1 − α/2, and
// the share is monotone in both, so its interval holds with 1 − α.
func (d *Dropped) Release(kept, dropped *big.Int, confidence float64) DroppedEstimate {
	k := d.kept.Release(clampInt64(kept))
	x := d.dropped.Release(clampInt64(dropped))
	tail := 1 - (1-confidence)/2
	hk, hx := d.kept.Interval(tail), d.dropped.Interval(tail)
	share := func(x, k float64) float64 {
		x, k = math.Max(x, 0), math.Max(k, 0)
		if x+k <= 0 {
			return 0
		}
		return x / (x + k)
	}
	e := DroppedEstimate{Kept: k, Dropped: x, Cap: d.Cap, Epsilon: d.Epsilon, Confidence: confidence}
	e.Share = share(float64(x), float64(k))
	e.Low = share(float64(x)-hx, float64(k)+hk)
	e.High = share(float64(x)+hx, float64(k)-hk)
	e.Low, e.High = math.Min(e.Low, e.Share), math.Max(e.High, e.Share)
	return e
}

// Note says what the estimate is, for people.
func (e DroppedEstimate) Note() string {
	return fmt.Sprintf("contribution bounding dropped at least about %s%% of the rows read (%s%% interval [%s%%, %s%%]), a DP estimate from noisy counts of rows kept (%d) and dropped (%d, each person's counted up to %d), at ε=%s of this query's: if the share is large, the catalog's max_groups_per_unit and max_rows_per_group are below what people contribute, and counts and sums read low",
		pct(e.Share), accounting.Num(e.Confidence*100), pct(e.Low), pct(e.High), e.Kept, e.Dropped, e.Cap, accounting.Note(e.Epsilon))
}

// pct spells a share in [0, 1] as a percentage with at most one decimal.
func pct(x float64) string {
	return accounting.NumTo(math.Round(x*1000)/10, 4)
}

// clampInt64 is x within the int64 range.
func clampInt64(x *big.Int) int64 {
	if x.IsInt64() {
		return x.Int64()
	}
	if x.Sign() < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}
