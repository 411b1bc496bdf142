package sqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// A Store (and its PendingStore) not made by New fails every method with
// an error naming the mistake; none panics.
func TestZeroStore(t *testing.T) {
	var s sqlstore.Store
	ctx := context.Background()
	assert.Error(t, s.Migrate(ctx))
	_, err := s.Atomic(ctx, func(context.Context) store.Unit { t.Error("fn ran"); return store.Unit{} })
	assert.ErrorContains(t, err, "not made by New")
	assert.Error(t, s.Append(ctx, nil, "u", store.Record{}))
	assert.Error(t, s.Write(ctx, "u", store.Record{}))
	_, err = s.Read(ctx, sqlstore.Filter{})
	assert.Error(t, err)
	assert.Error(t, s.View(ctx, func(context.Context) error { return nil }))
	p := s.Pending()
	assert.Error(t, p.Hold(ctx, actions.PendingChange{ID: "x"}))
	_, err = p.Get(ctx, "x")
	assert.Error(t, err)
	_, err = p.Take(ctx, "x")
	assert.Error(t, err)
	_, err = p.List(ctx, "p")
	assert.Error(t, err)
	var zp sqlstore.PendingStore
	_, err = zp.Get(ctx, "x")
	assert.Error(t, err)
}
