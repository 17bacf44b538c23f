package metrics

import (
	"bufio"
	"cmp"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The Prometheus text exposition format (version 0.0.4), which
// Prometheus scrapes, the Pushgateway takes and node_exporter's textfile
// collector reads, written here rather than through the Prometheus client
// library: its packages' initialisation would run at every start of
// writewatch, metrics asked for or not (docs/performance.md). The tests
// hold the output to the client library's, byte for byte, and to
// promtool's checks.

// textContentType is the format's media type.
const textContentType = "text/plain; version=0.0.4; charset=utf-8"

// family is one metric family: its samples share its name, help and type
// (counter or gauge), and the names of their labels.
type family struct {
	name, help, typ string
	samples         []sample
}

// sample is one value of a family, its labels sorted by name.
type sample struct {
	labels []labelPair
	value  float64
}

type labelPair struct{ name, value string }

// sortFamilies puts families and their samples in the order the client
// library gathers them: families by name, samples by their labels' values.
func sortFamilies(fams []family) {
	slices.SortFunc(fams, func(a, b family) int { return cmp.Compare(a.name, b.name) })
	for _, f := range fams {
		slices.SortStableFunc(f.samples, func(a, b sample) int {
			for i := range min(len(a.labels), len(b.labels)) {
				if c := cmp.Compare(a.labels[i].value, b.labels[i].value); c != 0 {
					return c
				}
			}
			return cmp.Compare(len(a.labels), len(b.labels))
		})
	}
}

// writeText writes fams in the text format.
func writeText(w io.Writer, fams []family) error {
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		if len(f.samples) == 0 {
			continue
		}
		bw.WriteString("# HELP " + f.name + " " + helpEscaper.Replace(f.help) + "\n")
		bw.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
		for _, s := range f.samples {
			bw.WriteString(f.name)
			if len(s.labels) > 0 {
				bw.WriteByte('{')
				for i, l := range s.labels {
					if i > 0 {
						bw.WriteByte(',')
					}
					bw.WriteString(l.name + `="` + valueEscaper.Replace(l.value) + `"`)
				}
				bw.WriteByte('}')
			}
			bw.WriteString(" " + formatValue(s.value) + "\n")
		}
	}
	return bw.Flush()
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatValue writes a value as the client library does: the shortest
// representation that reads back the same, NaN, +Inf and -Inf.
func formatValue(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// readSample reads one sample line of the text format: its metric name,
// labels and value. Comments, blank lines and lines it cannot read give
// ok false.
func readSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return "", nil, 0, false
	}
	name, rest := line[:end], line[end:]
	labels = map[string]string{}
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " \t,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return "", nil, 0, false
			}
			key := strings.TrimSpace(rest[:eq])
			v, n, good := unquoteLabel(rest[eq+2:])
			if !good {
				return "", nil, 0, false
			}
			labels[key] = v
			rest = rest[eq+2+n:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, false
	}
	value, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, value, true
}

// unquoteLabel reads a label value up to its closing quote, undoing the
// escapes: the value, and how many bytes it took with the quote.
func unquoteLabel(s string) (string, int, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, true
		case '\\':
			if i+1 == len(s) {
				return "", 0, false
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case '\\', '"':
				b.WriteByte(s[i])
			default:
				return "", 0, false
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}
