package metrics

// enum is a label with a short fixed list of values, held as an index into
// its labels array. Index 0 is always "other" (labelOther): the zero value
// and any index past the end of the list are counted under it, so a
// caller's value can never index past a collector array nor create a
// series.
type enum interface{ ~uint8 }

// known returns e, or 0 ("other") when e is past the end of labels.
func known[E enum](labels []string, e E) E {
	if int(e) >= len(labels) {
		return 0
	}
	return e
}

// labelOf returns the label value e is counted under.
func labelOf[E enum](labels []string, e E) string { return labels[known(labels, e)] }

// enumOf returns the value whose label is v; 0 ("other") when none is.
func enumOf[E enum](labels []string, v string) E { return E(labelIndex(labels, v)) }

// labelIndex returns the index of v in labels, whose first entry is
// "other"; 0 when v is not there. labels[0] is never matched, so "other"
// itself maps to 0 too.
func labelIndex(labels []string, v string) int {
	for i := 1; i < len(labels); i++ {
		if labels[i] == v {
			return i
		}
	}
	return 0
}
