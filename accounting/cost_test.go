package accounting

import (
	"math"
	"strings"
	"testing"
)

func TestCostValidate(t *testing.T) {
	tests := []struct {
		name    string
		cost    Cost
		wantErr string
	}{
		{"pure", Pure(1), ""},
		{"approximate", Approximate(1, 1e-6), ""},
		{"zero", Cost{}, ""},
		{"negative epsilon", Cost{Epsilon: -1}, "epsilon = -1"},
		{"NaN epsilon", Cost{Epsilon: math.NaN()}, "epsilon = NaN"},
		{"infinite rho", Cost{Rho: math.Inf(1)}, "rho = +Inf"},
		{"delta one", Cost{Epsilon: 1, Delta: 1}, "delta = 1"},
		{"rho delta above one", Cost{RhoDelta: 2}, "rho_delta = 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cost.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestPureHasRhoHalfEpsilonSquared(t *testing.T) {
	if c := Pure(0.1); math.Abs(c.Rho-0.005) > 1e-18 || c.Delta != 0 || c.RhoDelta != 0 {
		t.Fatalf("Pure(0.1) = %+v", c)
	}
}
