package printers

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
)

// CustomColumns prints -o custom-columns=HEADER:JSONPATH,...: one column
// per field, "<none>" where a field is absent.
type CustomColumns struct {
	headers   []string
	paths     []*jsonpath.JSONPath
	noHeaders bool
}

// NewCustomColumns parses a column spec such as
// NAME:.metadata.name,PHASE:.status.phase.
func NewCustomColumns(spec string, noHeaders bool) (*CustomColumns, error) {
	if spec == "" {
		return nil, fmt.Errorf("no columns: give HEADER:JSONPATH pairs, e.g. NAME:.metadata.name,PHASE:.status.phase")
	}
	p := &CustomColumns{noHeaders: noHeaders}
	for _, col := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(col, ":")
		if !ok || header == "" || path == "" {
			return nil, fmt.Errorf("column %q is not HEADER:JSONPATH", col)
		}
		if !strings.HasPrefix(path, "{") {
			path = "{" + strings.TrimPrefix(path, "{") + "}"
		}
		if !strings.HasPrefix(path, "{.") {
			path = "{." + strings.TrimPrefix(path, "{")
		}
		jp := jsonpath.New(header).AllowMissingKeys(true)
		if err := jp.Parse(path); err != nil {
			return nil, fmt.Errorf("column %s: %w", header, err)
		}
		p.headers = append(p.headers, header)
		p.paths = append(p.paths, jp)
	}
	return p, nil
}

// PrintObj prints one row per object, or per item of a list.
func (p *CustomColumns) PrintObj(obj runtime.Object, out io.Writer) error {
	w := printers.GetNewTabWriter(out)
	defer func() { _ = w.Flush() }()
	if !p.noHeaders {
		fmt.Fprintln(w, strings.Join(p.headers, "\t"))
	}
	items := []runtime.Object{obj}
	if apimeta.IsListType(obj) {
		var err error
		if items, err = apimeta.ExtractList(obj); err != nil {
			return err
		}
	}
	for _, item := range items {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(item)
		if err != nil {
			return err
		}
		cells := make([]string, len(p.paths))
		for i, jp := range p.paths {
			var b bytes.Buffer
			results, err := jp.FindResults(content)
			if err != nil {
				return err
			}
			var vals []string
			for _, r := range results {
				for _, v := range r {
					b.Reset()
					if err := jp.PrintResults(&b, []reflect.Value{v}); err != nil {
						return err
					}
					vals = append(vals, b.String())
				}
			}
			cells[i] = strings.Join(vals, ",")
			if cells[i] == "" {
				cells[i] = "<none>"
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return nil
}
