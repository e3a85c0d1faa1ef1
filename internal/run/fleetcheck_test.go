package run

import (
	"errors"
	"testing"

	"github.com/surge-bench/surge/internal/field"
)

// --workers with a budget names the budget flag that was set (a
// --max-requests user was told about --max-cost).
func TestFleetCheckNamesTheBudgetSet(t *testing.T) {
	n, c := int64(10), 1.0
	for want, o := range map[string]Options{
		"max_requests":      {Budget: Budget{MaxRequests: &n}},
		"max_output_tokens": {Budget: Budget{MaxOutputTokens: &n}},
		"max_cost":          {Budget: Budget{MaxCost: &c}},
	} {
		var fe *field.Error
		if err := o.FleetCheck(); !errors.As(err, &fe) || fe.Field != want {
			t.Errorf("%s: %v", want, err)
		}
	}
}
