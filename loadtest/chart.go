package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// Chart geometry in SVG user units.
const (
	chartW, chartH           = 900, 440
	padLeft, padRight        = 70, 200
	padTop, padBottom        = 40, 50
	plotW                    = chartW - padLeft - padRight
	plotH                    = chartH - padTop - padBottom
	yTicks                   = 5
	maxXTicks                = 10
	legendLine, legendHeight = 24, 20
)

// palette colours the series in order; dashed series reuse their solid
// partner's colour (a class's sent/s next to its delivered/s).
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// writeChart draws the per-second series as lines over time: x is the
// second of the run, y the value. A limited abuser shows as a flat
// delivered/s line far below its dashed sent/s line, next to normal users
// whose two lines coincide.
func writeChart(w io.Writer, title string, ss []series) error {
	bw := bufio.NewWriter(w)
	n, top := 0, 0.0
	for _, s := range ss {
		n = max(n, len(s.Values))
		for _, v := range s.Values {
			top = math.Max(top, v)
		}
	}
	top = niceCeil(top)
	x := func(i int) float64 {
		if n <= 1 {
			return padLeft
		}
		return padLeft + float64(i)*plotW/float64(n-1)
	}
	y := func(v float64) float64 { return padTop + plotH - v/top*plotH }

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	fmt.Fprintf(bw, `<text x="%d" y="22" font-size="14">%s</text>`+"\n", padLeft, esc(title))
	// Axes and grid.
	for k := 0; k <= yTicks; k++ {
		v := top * float64(k) / yTicks
		fmt.Fprintf(bw, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", padLeft, y(v), padLeft+plotW, y(v))
		fmt.Fprintf(bw, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padLeft-6, y(v)+4, formatTick(v))
	}
	step := max(1, (n+maxXTicks-1)/maxXTicks)
	for i := 0; i < n; i += step {
		fmt.Fprintf(bw, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(i), padTop+plotH+18, i+1)
	}
	fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padLeft, padTop+plotH, padLeft+plotW, padTop+plotH)
	fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padLeft, padTop, padLeft, padTop+plotH)
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">second of the run</text>`+"\n", padLeft+plotW/2, chartH-10)
	fmt.Fprintf(bw, `<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">per second</text>`+"\n", padTop+plotH/2, padTop+plotH/2)

	colour := 0
	for i, s := range ss {
		if i > 0 && !s.Dashed {
			colour++
		}
		c := palette[colour%len(palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts strings.Builder
		for j, v := range s.Values {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(j), y(v))
		}
		fmt.Fprintf(bw, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", c, dash, strings.TrimSpace(pts.String()))
		ly := padTop + 10 + i*legendHeight
		lx := padLeft + plotW + 15
		fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+legendLine, ly, c, dash)
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", lx+legendLine+6, ly+4, esc(s.Name))
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

func formatTick(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
