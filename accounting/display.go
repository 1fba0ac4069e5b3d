package accounting

import (
	"math"
	"strconv"
)

// DisplayDigits is the number of significant digits a person is shown:
// enough for any budget, few enough that float drift (0.1 + 0.2 =
// 0.30000000000000004) does not show.
const DisplayDigits = 12

// Num spells a number for people: the fewest digits that give the same
// value rounded to DisplayDigits significant digits ("4.6", not
// "4.6000000000000005"). Budget arithmetic is exact and never uses it.
func Num(x float64) string {
	return NumTo(x, DisplayDigits)
}

// NoteDigits is the number of significant digits of the figures a note
// describes a plan with (an aggregate's share of ε, a noise scale, a
// sensitivity): enough to read them, while what was charged is spelled by
// Num.
const NoteDigits = 4

// Note spells a figure of a plan's description for people: Num at
// NoteDigits significant digits ("0.1333", not "0.1333333333"; "8", not
// "8.000000000007276").
func Note(x float64) string {
	return NumTo(x, NoteDigits)
}

// NumTo spells x with the fewest digits that give the same value rounded to
// digits significant digits (1 to 17).
func NumTo(x float64, digits int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	digits = max(1, min(digits, 17))
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', digits, 64), 64)
	if err != nil {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// Display spells the cost for people under a budget of the rule: ε and
// δ, and ρ only where the budget composes in zCDP.
func (c Cost) Display(r Rule) string {
	s := "ε=" + Num(c.Epsilon) + " δ=" + Num(c.Delta)
	if r == ZCDP {
		s += " ρ=" + Num(c.Rho)
		if c.RhoDelta > 0 {
			s += " (approximate zCDP δ=" + Num(c.RhoDelta) + ")"
		}
	}
	return s
}
