package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// requests counts the API server's requests by "VERB resource[/sub]",
// with " (CODE)" after those it did not answer with success, from its
// apiserver_request_total counter.
type requests map[string]float64

// apiCounters are the API server's counters the bench reads.
type apiCounters struct {
	requests requests
	// terminatedWatches are the watches the API server closed because
	// their client fell behind, by resource.
	terminatedWatches watchCounts
}

// minus is c less an earlier reading.
func (c apiCounters) minus(before apiCounters) apiCounters {
	return apiCounters{requests: c.requests.minus(before.requests), terminatedWatches: c.terminatedWatches.minus(before.terminatedWatches)}
}

// scrapeAPI reads the API server's counters.
func scrapeAPI(ctx context.Context, cs kubernetes.Interface) (apiCounters, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiCounters{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	out := apiCounters{requests: requests{}, terminatedWatches: watchCounts{}}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if labels, ok := strings.CutPrefix(line, "apiserver_terminated_watchers_total{"); ok {
			if labels, value, ok := strings.Cut(labels, "} "); ok {
				v, _ := strconv.ParseFloat(value, 64)
				out.terminatedWatches[parseLabels(labels)["resource"]] += v
			}
			continue
		}
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		l := parseLabels(labels)
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		// A request the API server refused (throttled, timed out, in
		// conflict) is counted apart: under load, clients retry.
		if code := l["code"]; code != "" && !strings.HasPrefix(code, "2") {
			key += " (" + code + ")"
		}
		out.requests[key] += v
	}
	return out, sc.Err()
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// watchCounts counts watches by resource.
type watchCounts map[string]float64

// minus is w less an earlier reading.
func (w watchCounts) minus(before watchCounts) watchCounts { return moved(w, before) }

// String is the total, then each resource's share: "11 (pods 6,
// trainingjobs 5)".
func (w watchCounts) String() string {
	var total float64
	parts := make([]string, 0, len(w))
	for _, k := range slices.Sorted(maps.Keys(w)) {
		total += w[k]
		parts = append(parts, fmt.Sprintf("%s %.0f", k, w[k]))
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}

// minus is r less an earlier reading.
func (r requests) minus(before requests) requests { return moved(r, before) }

// moved is how far each of a reading's counters went up since an earlier
// one, leaving out those that did not move.
func moved[M ~map[string]float64](now, before M) M {
	out := M{}
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// background are writes that go on whatever the bench does: the
// components' leader-election leases.
func background(key string) bool {
	f := strings.Fields(key)
	return len(f) > 1 && f[1] == "leases"
}

func isWrite(key string) bool {
	switch strings.Fields(key)[0] {
	case "POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION":
		return !background(key)
	}
	return false
}

// refused is whether a key counts requests the API server turned down.
func refused(key string) bool {
	return strings.HasSuffix(key, ")")
}

// writes are the requests that changed something, less the background.
func (r requests) writes() float64 {
	var n float64
	for k, v := range r {
		if isWrite(k) && !refused(k) {
			n += v
		}
	}
	return n
}

// refusedWrites are the write requests the API server turned down: they
// changed nothing, but cost it work.
func (r requests) refusedWrites() float64 {
	var n float64
	for k, v := range r {
		if isWrite(k) && refused(k) {
			n += v
		}
	}
	return n
}

// writeKinds are the write counts by verb and resource, largest first.
func (r requests) writeKinds() []string {
	return r.kinds(isWrite)
}

// readKinds are the read counts (GET, LIST, WATCH) by verb and resource,
// largest first.
func (r requests) readKinds() []string {
	return r.kinds(func(k string) bool { return !isWrite(k) && !background(k) })
}

// union is a's keys, then those of b that a lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, k := range b {
		if !slices.Contains(a, k) {
			out = append(out, k)
		}
	}
	return out
}

// kinds are the keys of r that pick keeps, largest count first.
func (r requests) kinds(pick func(string) bool) []string {
	var keys []string
	for k := range r {
		if pick(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if r[a] != r[b] {
			if r[a] > r[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return keys
}

// add adds more's counts to r.
func (r requests) add(more requests) {
	for k, v := range more {
		r[k] += v
	}
}
