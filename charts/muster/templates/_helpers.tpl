{{/*
Labels of every object. app.kubernetes.io/name is also the selector of the
operator's pods, as in config/manager.
*/}}
{{- define "muster.labels" -}}
app.kubernetes.io/name: muster-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "muster.selectorLabels" -}}
app.kubernetes.io/name: muster-operator
{{- end -}}

{{/*
The label that sets the metrics Service apart from the webhook's: the
ServiceMonitor selects it with muster.selectorLabels.
*/}}
{{- define "muster.metricsServiceLabels" -}}
app.kubernetes.io/component: metrics
{{- end -}}

{{- define "muster.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end -}}

{{/* The operator's ServiceAccount, the subject of every binding. */}}
{{- define "muster.subjects" -}}
subjects:
- kind: ServiceAccount
  name: muster-operator
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/*
The operator's rules, as controller-gen generates them from the code's
+kubebuilder:rbac markers into config/rbac/role.yaml, split by scope: the
rules on namespaced resources go into a ClusterRole when the operator
watches every namespace and into a Role in each watched namespace
otherwise; the rules on cluster-scoped resources always go into a
ClusterRole. The chart test fails when their union differs from
config/rbac/role.yaml.
*/}}
{{- define "muster.rules.namespaced" -}}
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create, get, update]
- apiGroups: [""]
  resources: [pods]
  verbs: [create, delete, get, list, patch, watch]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
- apiGroups: [""]
  resources: [secrets]
  verbs: [create]
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [create, get]
- apiGroups: [""]
  resources: [services]
  verbs: [create, delete, get, list, watch]
# TensorBoards (spec.tensorboard).
- apiGroups: [apps]
  resources: [deployments]
  verbs: [create, delete, get, list, update, watch]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [muster.dev]
  resources: [trainingjobs]
  verbs: [delete, get, list, patch, update, watch]
- apiGroups: [muster.dev]
  resources: [trainingjobs/scale, trainingjobs/status]
  verbs: [get, patch, update]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings, roles]
  verbs: [create, get]
{{- end -}}

{{- define "muster.rules.cluster" -}}
# The webhook's certificate rotator watches the validating webhook
# configurations and writes the CA into Muster's.
- apiGroups: [admissionregistration.k8s.io]
  resources: [validatingwebhookconfigurations]
  verbs: [get, list, watch]
- apiGroups: [admissionregistration.k8s.io]
  resourceNames: [muster-validating-webhook]
  resources: [validatingwebhookconfigurations]
  verbs: [update]
# ... and into the CRD's conversion webhook, where one converts v1alpha1.
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, watch]
- apiGroups: [apiextensions.k8s.io]
  resourceNames: [trainingjobs.muster.dev]
  resources: [customresourcedefinitions]
  verbs: [update]
# The storage migration moves stored jobs to v1beta1, then says so in the
# CRD's status.storedVersions.
- apiGroups: [apiextensions.k8s.io]
  resourceNames: [trainingjobs.muster.dev]
  resources: [customresourcedefinitions/status]
  verbs: [patch]
# The metrics endpoint checks its clients' tokens and rights.
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
{{- if eq .Values.restart.defaultMode "Auto" }}
# The restart mode Auto follows the nodes: whether each takes pods, and
# declares RestartAllContainersOnContainerExits.
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch]
{{- end }}
{{- end -}}

{{/*
muster.rbac renders the RBAC of one part of the operator: a ClusterRole and
ClusterRoleBinding named .name with the rules .namespaced and .cluster when
the operator watches every namespace; otherwise a Role and RoleBinding named
.name in each watched namespace with .namespaced, and a ClusterRole with
.cluster only (none if there are no such rules). Called with
(dict "root" $ "name" ... "namespaced" ... "cluster" ...).
*/}}
{{- define "muster.rbac" -}}
{{- $root := .root -}}
{{- if not $root.Values.watchNamespaces }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .name }}
  labels:
    {{- include "muster.labels" $root | nindent 4 }}
rules:
{{- with .namespaced }}
{{ . }}
{{- end }}
{{- with .cluster }}
{{ . }}
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .name }}
  labels:
    {{- include "muster.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .name }}
{{ include "muster.subjects" $root }}
{{- else }}
{{- $name := .name }}
{{- $rules := .namespaced }}
{{- if $rules }}
{{- range $root.Values.watchNamespaces }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ . }}
  labels:
    {{- include "muster.labels" $root | nindent 4 }}
rules:
{{ $rules }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ . }}
  labels:
    {{- include "muster.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
{{ include "muster.subjects" $root }}
{{- end }}
{{- end }}
{{- with .cluster }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $name }}
  labels:
    {{- include "muster.labels" $root | nindent 4 }}
rules:
{{ . }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $name }}
  labels:
    {{- include "muster.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name }}
{{ include "muster.subjects" $root }}
{{- end }}
{{- end }}
{{- end -}}
