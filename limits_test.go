package actions

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
)

// resultBounds are the fields that stay negative when no limit is asked
// for (their code reads a negative bound as off); every other field reads
// as math.MaxInt32.
var resultBounds = map[string]bool{
	"MaxResultBytes": true, "MaxBatchResultBytes": true, "MaxEntryResultBytes": true,
	"MaxBatchBytes": true, "MaxRefusedParamBytes": true,
}

// TestLimitsOneRule: for every field of Limits, zero is its default and a
// negative value is no limit, as the type's doc says.
func TestLimitsOneRule(t *testing.T) {
	typ := reflect.TypeFor[Limits]()
	defaults := reflect.ValueOf(defaultLimits)
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		t.Run(name, func(t *testing.T) {
			require.NotZero(t, defaults.Field(i).Int(), "every field has a default")

			var zero Limits
			got := NewRegistry(&Options{Limits: zero}).Limits()
			assert.Equal(t, defaults.Field(i).Int(), reflect.ValueOf(got).Field(i).Int(), "zero means the default")

			var neg Limits
			reflect.ValueOf(&neg).Elem().Field(i).SetInt(-1)
			got = NewRegistry(&Options{Limits: neg}).Limits()
			want := int64(math.MaxInt32)
			if resultBounds[name] {
				want = -1
			}
			assert.Equal(t, want, reflect.ValueOf(got).Field(i).Int(), "negative means no limit")

			var set Limits
			reflect.ValueOf(&set).Elem().Field(i).SetInt(7)
			got = NewRegistry(&Options{Limits: set}).Limits()
			assert.Equal(t, int64(7), reflect.ValueOf(got).Field(i).Int(), "a positive value is kept")
		})
	}
}

// TestNegativeLimitLiftsTheBound: a call the default limit refuses passes
// when the field is negative (nesting depth and ref count here), where a
// negative value used to mean the default.
func TestNegativeLimitLiftsTheBound(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100)
	body := func(context.Context, map[string]any, *Trace) (any, error) { return "ok", nil }
	for _, tc := range []struct {
		limits Limits
		code   codes.Code
	}{
		{Limits{}, codes.InvalidParameters},
		{Limits{MaxParamDepth: 50}, codes.InvalidParameters},
		{Limits{MaxParamDepth: -1}, ""},
	} {
		t.Run(fmt.Sprint(tc.limits.MaxParamDepth), func(t *testing.T) {
			reg := NewRegistry(&Options{Limits: tc.limits})
			reg.MustRegister(New(Definition{ID: "a/deep", Parameters: `{"type":"object"}`}, body))
			_, err := reg.Run(context.Background(), Call{Action: "a/deep", Params: `{"x":` + deep + `}`})
			if tc.code == "" {
				require.NoError(t, err)
				return
			}
			assert.Equal(t, tc.code, CodeOf(err))
		})
	}
}
