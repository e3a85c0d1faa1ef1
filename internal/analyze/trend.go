package analyze

import (
	"math"
	"sync"
)

// Trend is an ordinary least-squares line y = Intercept + Slope·x through n
// points, with the uncertainty of its slope:
//
//	x̄ = Σx / n,  ȳ = Σy / n
//	Sxx = Σ(x − x̄)²,  Sxy = Σ(x − x̄)(y − ȳ),  slope b = Sxy / Sxx,  a = ȳ − b·x̄
//	residual variance s² = Σ(y − a − b·x)² / (n − 2)
//	SE(b) = √(s² / Sxx),  t = b / SE(b) with n − 2 degrees of freedom
//	CI = b ± t_{(1+c)/2, n−2} · SE(b)   (c = confidence, e.g. 0.95)
//	p  = two-sided P(|T| ≥ |t|) under Student's t with n − 2 degrees of freedom
//
// The slope is in y units per x unit (e.g. ms per hour for a drift test,
// requests per second for a backlog). A perfect fit (SE = 0) has t = ±Inf
// and p = 0, or p = 1 when the slope is 0 too.
//
// The test assumes independent residuals; consecutive windows of a loaded
// service are autocorrelated, so the interval is optimistic. Callers
// therefore also require a change large enough to matter (see TestDrift).
type Trend struct {
	N          int     `json:"n"`
	Slope      float64 `json:"slope"`     // y units per x unit
	Intercept  float64 `json:"intercept"` // y at x = 0
	SlopeSE    float64 `json:"slope_se"`  // standard error of the slope
	CILow      float64 `json:"ci_low"`    // confidence interval of the slope
	CIHigh     float64 `json:"ci_high"`
	T          float64 `json:"-"`          // slope / SE (±Inf for a perfect fit)
	P          float64 `json:"p"`          // two-sided p-value of slope = 0
	Confidence float64 `json:"confidence"` // of the interval
	MeanY      float64 `json:"mean_y"`
}

// At is the fitted value at x: Intercept + Slope·x.
func (t Trend) At(x float64) float64 { return t.Intercept + t.Slope*x }

// Significant reports whether the confidence interval of the slope excludes
// zero (CILow > 0 or CIHigh < 0).
func (t Trend) Significant() bool { return t.CILow > 0 || t.CIHigh < 0 }

// FitTrend fits a Trend to the points (x[i], y[i]) where both are finite
// (NaN and ±Inf are skipped; x beyond len(y) is ignored), with a slope
// interval of the given confidence (e.g. 0.95). It needs at least three such
// points with distinct x; otherwise ok is false and only Trend.N (the points
// kept) is set.
func FitTrend(x, y []float64, confidence float64) (Trend, bool) {
	var xs, ys []float64
	for i := range x {
		if i < len(y) && finite(x[i]) && finite(y[i]) {
			xs, ys = append(xs, x[i]), append(ys, y[i])
		}
	}
	n := len(xs)
	if n < 3 {
		return Trend{N: n}, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if !(sxx > 0) {
		return Trend{N: n}, false
	}
	b := sxy / sxx
	a := my - b*mx
	var rss float64
	for i := range xs {
		r := ys[i] - a - b*xs[i]
		rss += r * r
	}
	df := float64(n - 2)
	se := math.Sqrt(rss / df / sxx)
	tr := Trend{N: n, Slope: b, Intercept: a, SlopeSE: se, Confidence: confidence, MeanY: my}
	q := tQuantile((1+confidence)/2, df)
	tr.CILow, tr.CIHigh = b-q*se, b+q*se
	switch {
	case se > 0:
		tr.T = b / se
		tr.P = 2 * (1 - tCDF(math.Abs(tr.T), df))
	case b == 0:
		tr.P = 1
	default:
		tr.T = math.Copysign(math.Inf(1), b)
		tr.P = 0
	}
	return tr, true
}

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// tCDF is Student's t cumulative distribution with df degrees of freedom:
// for t ≥ 0, 1 − I_{df/(df+t²)}(df/2, 1/2) / 2, with I the regularized
// incomplete beta function.
func tCDF(t, df float64) float64 {
	if math.IsInf(t, 1) {
		return 1
	}
	if math.IsInf(t, -1) {
		return 0
	}
	p := 0.5 * incBeta(df/2, 0.5, df/(df+t*t))
	if t >= 0 {
		return 1 - p
	}
	return p
}

// tQuantiles caches tQuantile: trend tests ask for the same few.
var tQuantiles sync.Map // tKey → float64

type tKey struct{ p, df float64 }

// tQuantile inverts tCDF by bisection: the t with tCDF(t, df) = p.
func tQuantile(p, df float64) float64 {
	if p == 0.5 {
		return 0
	}
	if v, ok := tQuantiles.Load(tKey{p, df}); ok {
		return v.(float64)
	}
	q := tBisect(p, df)
	tQuantiles.Store(tKey{p, df}, q)
	return q
}

func tBisect(p, df float64) float64 {
	lo, hi := -1e6, 1e6
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-10*math.Max(1, math.Abs(mid)) {
			break
		}
	}
	return (lo + hi) / 2
}

// incBeta is the regularized incomplete beta function I_x(a, b), by the
// continued fraction of Numerical Recipes (§6.4).
func incBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		aa := fm * (b - fm) * x / ((qam + 2*fm) * (a + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + 2*fm) * (qap + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 3e-15 {
			break
		}
	}
	return h
}
