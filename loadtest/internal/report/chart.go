package report

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Chart geometry in SVG user units.
const (
	chartW, chartH           = 900, 440
	padLeft, padRight        = 70, 230
	padTop, padBottom        = 40, 50
	plotW                    = chartW - padLeft - padRight
	plotH                    = chartH - padTop - padBottom
	yTicks                   = 5
	maxXTicks                = 10
	legendLine, legendHeight = 24, 20
)

// logSpan is the ratio between the largest and the smallest series (by
// their mean) from which the y axis turns logarithmic: at 10× the small
// series of a linear chart sit flat on the axis under the large one (the
// flood's 200/s delivered under its 5,000/s sent).
const logSpan = 10

// palette colours the series by group in order of appearance; a group's
// series share a colour and differ in style (a class's sent/s dashed,
// its undelivered/s dotted, next to its delivered/s).
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// dashArray is the SVG stroke-dasharray of each style.
var dashArray = map[LineStyle]string{StyleDashed: "6 4", StyleDotted: "2 3"}

// yAxis maps values to the plot's height, linearly or on a log scale.
type yAxis struct {
	log    bool
	lo, hi float64 // the axis range; powers of ten when log
}

// newYAxis picks the axis for values: logarithmic when the series' means
// span logSpan or more, linear from 0 otherwise.
func newYAxis(ss [][]float64) yAxis {
	top, minPos := 0.0, math.Inf(1)
	meanLo, meanHi := math.Inf(1), 0.0
	for _, vs := range ss {
		sum, n := 0.0, 0
		for _, v := range vs {
			top = math.Max(top, v)
			if v > 0 {
				minPos = math.Min(minPos, v)
				sum += v
				n++
			}
		}
		if n > 0 {
			m := sum / float64(n)
			meanLo, meanHi = math.Min(meanLo, m), math.Max(meanHi, m)
		}
	}
	if meanHi > 0 && meanHi/meanLo >= logSpan {
		lo := math.Pow(10, math.Floor(math.Log10(minPos)))
		hi := math.Pow(10, math.Ceil(math.Log10(top)))
		if hi <= lo {
			hi = lo * 10
		}
		return yAxis{log: true, lo: lo, hi: hi}
	}
	return yAxis{lo: 0, hi: niceCeil(top)}
}

// y returns the SVG y of v; on a log axis a value at or below the
// bottom (0, nothing that second) lies on the axis.
func (a yAxis) y(v float64) float64 {
	f := 0.0
	if a.log {
		if v > a.lo {
			f = math.Log10(v/a.lo) / math.Log10(a.hi/a.lo)
		}
	} else {
		f = v / a.hi
	}
	return padTop + plotH - f*plotH
}

// ticks returns the grid values: powers of ten on a log axis, yTicks
// equal steps on a linear one.
func (a yAxis) ticks() []float64 {
	var out []float64
	if a.log {
		for v := a.lo; v <= a.hi*1.0001; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	for k := 0; k <= yTicks; k++ {
		out = append(out, a.hi*float64(k)/yTicks)
	}
	return out
}

// label names the axis.
func (a yAxis) label(unit string) string {
	if a.log {
		return unit + " (log scale)"
	}
	return unit
}

// svgHeader starts a chart: canvas, title, grid and y axis.
func svgHeader(bw *bufio.Writer, title, yLabel string, ax yAxis) {
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	fmt.Fprintf(bw, `<text x="%d" y="22" font-size="14">%s</text>`+"\n", padLeft, esc(title))
	for _, v := range ax.ticks() {
		fmt.Fprintf(bw, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", padLeft, ax.y(v), padLeft+plotW, ax.y(v))
		fmt.Fprintf(bw, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padLeft-6, ax.y(v)+4, formatTick(v))
	}
	fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padLeft, padTop+plotH, padLeft+plotW, padTop+plotH)
	fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padLeft, padTop, padLeft, padTop+plotH)
	fmt.Fprintf(bw, `<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">%s</text>`+"\n", padTop+plotH/2, padTop+plotH/2, esc(yLabel))
}

// legend draws one legend entry at row i.
func legend(bw *bufio.Writer, i int, colour, dash, name string, bar bool) {
	ly := padTop + 10 + i*legendHeight
	lx := padLeft + plotW + 15
	if bar {
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%d" height="10" fill="%s"/>`+"\n", lx, ly-5, legendLine, colour)
	} else {
		fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+legendLine, ly, colour, dash)
	}
	fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", lx+legendLine+6, ly+4, esc(name))
}

// WriteChart draws the per-second series as lines over time: x is the
// second of the run, y the value, on a log scale when the series differ
// by an order of magnitude or more. A limited abuser shows as a
// delivered/s line far below its dashed sent/s line, its dotted
// undelivered/s line just under the sent one, next to normal users whose
// delivered and sent lines coincide.
func WriteChart(w io.Writer, title string, ss []Series) error {
	bw := bufio.NewWriter(w)
	n := 0
	var vals [][]float64
	unit := "per second"
	for _, s := range ss {
		n = max(n, len(s.Values))
		vals = append(vals, s.Values)
		if !strings.Contains(s.Name, "/s") {
			unit = "value"
			if len(ss) == 1 {
				unit = s.Name
			}
		}
	}
	if len(ss) > 0 && ss[0].Unit != "" {
		unit = ss[0].Unit
	}
	ax := newYAxis(vals)
	x := func(i int) float64 {
		if n <= 1 {
			return padLeft
		}
		return padLeft + float64(i)*plotW/float64(n-1)
	}
	svgHeader(bw, title, ax.label(unit), ax)
	xStep, xLabel := time.Second, "second of the run"
	if len(ss) > 0 && ss[0].Step > 0 && ss[0].Step != time.Second {
		xStep, xLabel = ss[0].Step, "seconds, each point the "+ss[0].Step.String()+" up to it"
	}
	step := max(1, (n+maxXTicks-1)/maxXTicks)
	for i := 0; i < n; i += step {
		fmt.Fprintf(bw, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(i), padTop+plotH+18,
			strconv.FormatFloat((time.Duration(i+1)*xStep).Seconds(), 'f', -1, 64))
	}
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padLeft+plotW/2, chartH-10, esc(xLabel))
	if len(ss) > 0 {
		drawMarks(bw, ss[0].Marks, func(t float64) float64 {
			return x(0) + (t/xStep.Seconds()-1)*(x(1)-x(0))
		})
	}

	colours := map[string]string{}
	for i, s := range ss {
		key := s.Group
		if key == "" {
			key = "\x00" + s.Name
		}
		c, ok := colours[key]
		if !ok {
			c = palette[len(colours)%len(palette)]
			colours[key] = c
		}
		dash := ""
		if d := dashArray[s.Style]; d != "" {
			dash = ` stroke-dasharray="` + d + `"`
		}
		var pts strings.Builder
		for j, v := range s.Values {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(j), ax.y(v))
		}
		fmt.Fprintf(bw, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", c, dash, strings.TrimSpace(pts.String()))
		if len(s.Values) == 1 {
			// A line of one point is invisible: mark it.
			fmt.Fprintf(bw, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", x(0), ax.y(s.Values[0]), c)
		}
		legend(bw, i, c, dash, s.Name, false)
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

// drawMarks draws each mark as a dashed vertical line across the plot at
// xAt(its time), clamped to the plot, with its label at the top turned
// along the line so that marks close together stay readable.
func drawMarks(bw *bufio.Writer, marks []Mark, xAt func(float64) float64) {
	for _, m := range marks {
		mx := math.Min(math.Max(xAt(m.At), padLeft), padLeft+plotW)
		if math.IsNaN(mx) {
			mx = padLeft
		}
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="3 3"/>`+"\n", mx, padTop, mx, padTop+plotH)
		if m.Label != "" {
			fmt.Fprintf(bw, `<text x="%.1f" y="%d" font-size="10" transform="rotate(90 %.1f %d)">%s</text>`+"\n", mx+3, padTop+4, mx+3, padTop+4, esc(m.Label))
		}
	}
}

// BarSet is one colour of a bar chart: a value per group.
type BarSet struct {
	Name   string    // the legend's label
	Values []float64 // one per group, in the groups' order
}

// WriteBars draws grouped bars on a log axis, one group per x position
// and one bar per set in each group, with each bar's value at its end.
// With ref (1 for ratios) the bars grow from a reference line at ref, so
// a ratio below 1 points down; 0 draws them from the axis.
func WriteBars(w io.Writer, title, yLabel string, groups []string, sets []BarSet, ref float64) error {
	bw := bufio.NewWriter(w)
	var vals [][]float64
	for _, s := range sets {
		vals = append(vals, s.Values)
	}
	if ref > 0 {
		vals = append(vals, []float64{ref})
	}
	ax := newYAxis(vals)
	if !ax.log {
		// Ratios read best on a log axis whatever their spread: 2× and
		// ½× lie the same distance from 1.
		lo, hi := math.Inf(1), 0.0
		for _, vs := range vals {
			for _, v := range vs {
				if v > 0 {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		ax = yAxis{log: true, lo: math.Pow(10, math.Floor(math.Log10(lo))), hi: math.Pow(10, math.Ceil(math.Log10(hi)))}
		if ax.hi <= ax.lo {
			ax.hi = ax.lo * 10
		}
	}
	svgHeader(bw, title, ax.label(yLabel), ax)
	groupW := float64(plotW) / float64(max(len(groups), 1))
	barW := groupW * 0.8 / float64(max(len(sets), 1))
	for g, name := range groups {
		gx := padLeft + float64(g)*groupW
		fmt.Fprintf(bw, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx+groupW/2, padTop+plotH+18, esc(name))
		for i, s := range sets {
			if g >= len(s.Values) || s.Values[g] <= 0 {
				continue
			}
			v := s.Values[g]
			bx := gx + groupW*0.1 + float64(i)*barW
			// A bar grows from the reference line (from the axis without
			// one): up above it, down below it.
			base := float64(padTop + plotH)
			if ref > 0 {
				base = ax.y(ref)
			}
			top, bottom, labelY := ax.y(v), base, ax.y(v)-3
			if top > bottom {
				top, bottom, labelY = bottom, top, top+12
			}
			fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
				bx, top, barW-2, max(bottom-top, 1), palette[i%len(palette)])
			fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", bx+barW/2-1, labelY, FormatValue(v))
		}
	}
	if ref > 0 {
		fmt.Fprintf(bw, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black" stroke-dasharray="6 4"/>`+"\n", padLeft, ax.y(ref), padLeft+plotW, ax.y(ref))
	}
	for i, s := range sets {
		legend(bw, i, palette[i%len(palette)], "", s.Name, true)
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1), so
// the grid lines fall on round numbers.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// formatTick writes a grid value: 0.01, 5, 2000, 1e+06.
func formatTick(v float64) string {
	if v == math.Trunc(v) && v < 1e6 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// FormatValue writes a bar's value with two or three significant digits.
func FormatValue(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
