package analyze

// SampleAt is the last timeline sample at or before ms (milliseconds since
// the run origin), or the zero Sample when none is.
func (r *Result) SampleAt(ms float64) Sample {
	var best Sample
	for _, s := range r.Timeline {
		if s.TMs > ms {
			break
		}
		best = s
	}
	return best
}
