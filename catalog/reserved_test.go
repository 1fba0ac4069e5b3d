package catalog

import (
	"strings"
	"testing"

	"github.com/dpstat/dpstat/schema"
)

// TestReservedNames: a table or column name beginning with schema.ReservedPrefix,
// in any case, is refused with what to do instead; the names the
// statements once gave (u, k0, s0, …) and near misses are ordinary names,
// and a reserved source column is read under another name with from:.
func TestReservedNames(t *testing.T) {
	dir := writeSource(t)
	for _, c := range []struct {
		name, table, columns string
		// refused is a part of the refusal, "" for a catalog accepted.
		refused []string
	}{
		{"column", "people", "      pid: {type: int}\n      _dp_u: {type: int}\n",
			[]string{`column _dp_u: name "_dp_u": names beginning with _dp_ are dpstat's own`, "from:", "u_col: {from: _dp_u"}},
		{"column in another case", "people", "      pid: {type: int}\n      _DP_K0: {type: int}\n",
			[]string{`name "_DP_K0": names beginning with _dp_`}},
		{"privacy unit", "people", "      _dp_pid: {type: int}\n", []string{`column _dp_pid: name "_dp_pid"`}},
		{"table", "_dp_r", "      pid: {type: int}\n", []string{`table _dp_r: name "_dp_r": names beginning with _dp_ are dpstat's own`}},
		{"generated names of old are data", "people", "      pid: {type: int}\n      u: {type: int}\n      k0: {type: int}\n      s0: {type: int}\n      b: {type: int}\n", nil},
		{"near misses", "dp_r", "      pid: {type: int}\n      dp_u: {type: int}\n      _dpu: {type: int}\n      x_dp_: {type: int}\n", nil},
		{"a reserved source column under another name", "people", "      pid: {type: int}\n      u_col: {type: int, from: _dp_u}\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			unit := "pid"
			if strings.Contains(c.columns, "_dp_pid") {
				unit = "_dp_pid"
			}
			text := "budget: {epsilon: 1}\ntables:\n  " + c.table + ":\n    source: d.csv\n    privacy_unit: " + unit +
				"\n    max_groups_per_unit: 1\n    max_rows_per_group: 1\n    columns:\n" + c.columns
			_, err := Parse([]byte(text), dir)
			if len(c.refused) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want a refusal mentioning %q", c.refused)
			}
			for _, want := range c.refused {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal %q does not mention %q", err, want)
				}
			}
		})
	}
	for name, want := range map[string]bool{"_dp_u": true, "_DP_": true, "_Dp_x": true, "_dp": false, "dp_u": false, "u": false, "": false} {
		if schema.Reserved(name) != want {
			t.Errorf("Reserved(%q) = %v, want %v", name, !want, want)
		}
	}
}
