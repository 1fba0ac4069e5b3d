package accounting

import "testing"

func TestNumAndNote(t *testing.T) {
	tests := []struct {
		x         float64
		num, note string
	}{
		{4.6000000000000005, "4.6", "4.6"},
		{0.39999999999999997, "0.4", "0.4"},
		{0.4 / 3, "0.133333333333", "0.1333"},
		{8.000000000007276, "8.00000000001", "8"},
		{0.3333333330228925, "0.333333333023", "0.3333"},
		{1e-5, "1e-05", "1e-05"},
		{27815, "27815", "27820"},
		{0, "0", "0"},
		{-2.5, "-2.5", "-2.5"},
	}
	for _, tc := range tests {
		if got := Num(tc.x); got != tc.num {
			t.Errorf("Num(%v) = %s, want %s", tc.x, got, tc.num)
		}
		if got := Note(tc.x); got != tc.note {
			t.Errorf("Note(%v) = %s, want %s", tc.x, got, tc.note)
		}
	}
}
