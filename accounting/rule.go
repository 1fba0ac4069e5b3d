package accounting

// Rule names how a budget adds up costs. Every report of spent and remaining
// budget states the rule it used.
type Rule string

const (
	// Basic is sequential composition: the ε's add and the δ's add. It is
	// the right rule for budgets spent on pure-DP releases.
	Basic Rule = "basic"
	// ZCDP adds the releases' ρ's (and their approximate-zCDP δ's) and
	// converts the total to (ε, δ) with the budget's δ. It is tighter when
	// many releases are Gaussian.
	ZCDP Rule = "zcdp"
)

// EpsDelta is an (ε, δ) pair: a budget, an amount spent or an amount left.
type EpsDelta struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}
