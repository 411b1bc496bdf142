package sqlstore

// WhereOf exposes Filter.where to the tests: the WHERE clause and
// arguments of what f selects, in d's bind parameters.
func WhereOf(f Filter, d Dialect) (string, []any) {
	return f.where((&Store{dialect: d}).param)
}
