package sqlstore

import "context"

// WhereOf exposes Filter.where to the tests: the WHERE clause and
// arguments of what f selects, in d's bind parameters.
func WhereOf(f Filter, d Dialect) (string, []any) {
	return f.where((&Store{dialect: d}).param)
}

// MigrateTo exposes migrateTo: the tables as they were at version.
func (s *Store) MigrateTo(ctx context.Context, version int) error {
	return s.migrateTo(ctx, version)
}
