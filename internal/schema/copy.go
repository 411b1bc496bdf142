package schema

// Copy returns a deep copy of a JSON value made of map[string]any, []any
// and scalars. Scalars are immutable and shared.
func Copy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = Copy(e)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = Copy(e)
		}
		return a
	}
	return v
}
