package cmdutil

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	musterprinters "github.com/muster-dev/muster/internal/cli/printers"
)

// PrintFlags are kubectl's output flags: cli-runtime's -o json, yaml,
// name, jsonpath and go-template, plus the table (the default), -o wide
// and -o custom-columns, which kubectl keeps in its own packages.
type PrintFlags struct {
	*genericclioptions.PrintFlags
	NoHeaders bool
}

// NewPrintFlags returns output flags whose printers set apiVersion and
// kind, which typed clients leave empty.
func NewPrintFlags() *PrintFlags {
	return &PrintFlags{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(Scheme)}
}

// AllowedFormats lists what -o takes.
func (f *PrintFlags) AllowedFormats() []string {
	return append([]string{"wide", "custom-columns=HEADER:JSONPATH,..."}, f.PrintFlags.AllowedFormats()...)
}

// AddFlags adds -o, --no-headers and the template flags.
func (f *PrintFlags) AddFlags(cmd *cobra.Command) {
	f.PrintFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format. One of: (" + strings.Join(f.AllowedFormats(), ", ") + ")."
	cmd.Flags().BoolVar(&f.NoHeaders, "no-headers", false, "leave out the table's header line")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"wide", "yaml", "json", "name", "jsonpath=", "custom-columns="}, cobra.ShellCompDirectiveNoSpace
	})
}

// TableFunc renders objects as a table; wide columns have priority 1.
type TableFunc func(runtime.Object) (*metav1.Table, error)

// ToPrinter is the printer -o asks for; the table, from toTable, when -o
// is empty or wide.
func (f *PrintFlags) ToPrinter(toTable TableFunc, withNamespace bool) (printers.ResourcePrinter, error) {
	format := ""
	if f.OutputFormat != nil {
		format = *f.OutputFormat
	}
	switch {
	case format == "" || format == "wide":
		table := printers.NewTablePrinter(printers.PrintOptions{
			Wide: format == "wide", WithNamespace: withNamespace, NoHeaders: f.NoHeaders,
		})
		return printers.ResourcePrinterFunc(func(obj runtime.Object, w io.Writer) error {
			t, err := toTable(obj)
			if err != nil {
				return err
			}
			return table.PrintObj(t, w)
		}), nil
	case strings.HasPrefix(format, "custom-columns="):
		p, err := musterprinters.NewCustomColumns(strings.TrimPrefix(format, "custom-columns="), f.NoHeaders)
		if err != nil {
			return nil, fmt.Errorf("-o %s: %w", format, err)
		}
		return p, nil
	}
	p, err := f.PrintFlags.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return nil, fmt.Errorf("-o %s is not an output format: use one of %s", format, strings.Join(f.AllowedFormats(), ", "))
	}
	if err != nil || format != "name" {
		return p, err
	}
	// The name printer takes only unstructured lists: give it the items.
	return printers.ResourcePrinterFunc(func(obj runtime.Object, w io.Writer) error {
		if !apimeta.IsListType(obj) {
			return p.PrintObj(obj, w)
		}
		items, err := apimeta.ExtractList(obj)
		if err != nil {
			return err
		}
		for _, item := range items {
			if err := p.PrintObj(item, w); err != nil {
				return err
			}
		}
		return nil
	}), nil
}
