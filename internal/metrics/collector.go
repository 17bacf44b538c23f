package metrics

import (
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// collector gives a run's metrics to a registry, as constant gauges
// computed at each gathering.
type collector struct {
	run     *Run
	carried float64
	descs   map[string]*prometheus.Desc
	order   []*prometheus.Desc
}

// collector describes r's metrics with labels as constant labels; carried
// is the last clean run's time from before this run, in Unix seconds (0:
// none).
func (r *Run) collector(labels Labels, carried float64) *collector {
	c := &collector{run: r, carried: carried, descs: map[string]*prometheus.Desc{}}
	for _, d := range definitions() {
		desc := prometheus.NewDesc(d.name, d.help, d.labels, prometheus.Labels(labels))
		c.descs[d.name] = desc
		c.order = append(c.order, desc)
	}
	return c
}

// Describe sends every metric the run can have (prometheus.Collector).
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.order {
		ch <- d
	}
}

// Collect sends the run's samples now (prometheus.Collector). A sample the
// library refuses fails the gathering, through an invalid metric.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.run.collect(c.carried, func(name string, x float64, lv ...string) {
		d := c.descs[name]
		m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, x, lv...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	})
}

// registry is a new registry that holds r's metrics alone, as collector
// describes them.
func (r *Run) registry(labels Labels, carried float64) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(r.collector(labels, carried)); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return reg, nil
}

// writeText writes what g gathers in the text exposition format
// (version 0.0.4), as prometheus.WriteToTextfile does.
func writeText(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return err
		}
	}
	return nil
}

// readLastClean finds writewatch_last_clean_run_timestamp_seconds with
// exactly labels in a textfile, read with the library's parser. A file
// empty or that the parser refuses carries nothing over.
func readLastClean(r io.Reader, labels Labels) float64 {
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0
	}
	for _, m := range mfs[NameLastCleanRun].GetMetric() {
		if sameLabels(m.GetLabel(), labels) {
			// Untyped when the file has no TYPE line for it.
			return max(m.GetGauge().GetValue()+m.GetUntyped().GetValue(), 0)
		}
	}
	return 0
}

func sameLabels(got []*dto.LabelPair, labels Labels) bool {
	if len(got) != len(labels) {
		return false
	}
	for _, l := range got {
		if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}
