package plan

import "k8s.io/apimachinery/pkg/util/validation/field"

func fieldPath(root string, more ...string) *field.Path { return field.NewPath(root, more...) }
