package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Document is one manifest of the input, decoded but not interpreted.
type Document struct {
	// Source names it in messages: "<file> (document N)".
	Source string
	// Object is the manifest; numbers are json.Number, so that integers
	// stay exact.
	Object map[string]any
}

// APIVersion and Kind are the document's type.
func (d Document) APIVersion() string { s, _ := d.Object["apiVersion"].(string); return s }

// Kind is the document's kind.
func (d Document) Kind() string { s, _ := d.Object["kind"].(string); return s }

// Name is the document's metadata.name.
func (d Document) Name() string {
	m, _ := d.Object["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}

// Namespace is the document's metadata.namespace.
func (d Document) Namespace() string {
	m, _ := d.Object["metadata"].(map[string]any)
	s, _ := m["namespace"].(string)
	return s
}

// Parse reads every YAML or JSON document of r. name names r in messages.
// Empty documents are skipped; a List's items are documents of their own.
func Parse(name string, r io.Reader) ([]Document, error) {
	y := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var docs []Document
	for i := 1; ; i++ {
		var raw runtime.RawExtension
		if err := y.Decode(&raw); errors.Is(err, io.EOF) {
			return docs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s (document %d): %w", name, i, err)
		}
		raw.Raw = bytes.TrimSpace(raw.Raw)
		if len(raw.Raw) == 0 || string(raw.Raw) == "null" {
			continue
		}
		where := fmt.Sprintf("%s (document %d)", name, i)
		d := json.NewDecoder(bytes.NewReader(raw.Raw))
		d.UseNumber()
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			return nil, fmt.Errorf("%s: not an object: %w", where, err)
		}
		if items, ok := obj["items"].([]any); ok && isList(obj) {
			for j, item := range items {
				m, ok := item.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s: items[%d] is not an object", where, j)
				}
				docs = append(docs, Document{Source: fmt.Sprintf("%s items[%d]", where, j), Object: m})
			}
			continue
		}
		docs = append(docs, Document{Source: where, Object: obj})
	}
}

func isList(obj map[string]any) bool {
	kind, _ := obj["kind"].(string)
	return kind == "List" || (len(kind) > 4 && kind[len(kind)-4:] == "List")
}
