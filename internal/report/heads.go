package report

// ColumnHead returns the header people see for the results table's
// column key ("TTFT p50" for ttft_p50_ms, "429 %" for rejection_rate),
// and whether the table has such a column (surge compare names a
// results.json field by it).
func ColumnHead(key string) (string, bool) {
	for _, c := range columns {
		if c.Key == key {
			if c.Head == "" {
				return key, true
			}
			return c.Head, true
		}
	}
	return "", false
}
