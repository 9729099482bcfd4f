package devcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The stock stages KWOK's own cluster tool uses ("fast": nodes Ready at
// once, pods Running at once, deletions honoured at once) come from the
// kwok module's source zip, so they always match the kwok binary.
var kwokStageFiles = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// Annotations that drive the pod-complete-annotated stage on fake nodes.
const (
	// KWOKCompleteDelayAnnotation ("30s", "1m") makes a fake pod finish that
	// long after it started running, whoever owns it (the stock stage only
	// finishes pods owned by a batch Job).
	KWOKCompleteDelayAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"
	// KWOKExitCodeAnnotation sets the exit code it finishes with (default 0;
	// non-zero makes the pod Failed).
	KWOKExitCodeAnnotation = "pod-complete.stage.kwok.x-k8s.io/exit-code"
	// KWOKKeepRunningLabel keeps a fake pod running even when a batch Job
	// owns it, which the stock stage would finish at once: a training
	// job's pods run until their work is done, and the benchmark's built-in
	// floor (Indexed Jobs) must run as long as Muster's pods do.
	KWOKKeepRunningLabel = "kwok.muster.dev/keep-running"
)

// kwokConfiguration raises the pod stage parallelism: the default of 4
// paces an operator that creates hundreds of pods at once. kwok applies no
// defaults to a configuration read from a file (a zero lease parallelism
// makes it exit), so every option its defaulting would set is spelled out.
const kwokConfiguration = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 32
  nodePlayStageParallelism: 16
  nodeLeaseParallelism: 16
  podsOnNodeSyncParallelism: 4
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: false
`

// podCompleteAnnotated finishes running pods that carry the delay
// annotation. The jitter is what KWOK actually waits for (the delay is only
// its lower bound), so it reads the same annotation.
var podCompleteAnnotated = fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete-annotated
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.annotations["%[1]s"]'
      operator: 'Exists'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["%[1]s"]'
    jitterDurationFrom:
      expressionFrom: '.metadata.annotations["%[1]s"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $code := or (index .metadata.annotations "%[2]s") "0" }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {{ $code }}
            finishedAt: {{ $now | Quote }}
            reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
`, KWOKCompleteDelayAnnotation, KWOKExitCodeAnnotation)

// podRestartInPlace restarts every container of a running pod in place
// when Muster asks (its muster.dev/in-place-restarts annotation goes above
// the restart watcher's restart count), as kubelet 1.36's
// RestartAllContainers ends: the pod keeps its UID and IP, every container
// counts one more restart than it did (its restarts alone stay counted, as
// the kubelet keeps them; one step per restart asked), init containers ran again (a native sidecar
// runs), the others run anew with the last end the kubelet gives a removed
// container. The selector compares in a JQ expression: KWOK 0.8's CEL
// fails to compile a macro over a pod's container statuses ("unexpected
// failed resolution of v1.ContainerStatus"), and a failed compile stops
// the node's pods from being played at all.
const podRestartInPlace = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-restart-in-place
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: >-
        ([.status.initContainerStatuses[]? | select(.name == "muster-restart-watcher") | .restartCount][0] // 0)
        < ((.metadata.annotations["muster.dev/in-place-restarts"] // "0") | tonumber)
      operator: 'In'
      values:
      - 'true'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $statuses := .status.containerStatuses }}
      {{ $initStatuses := .status.initContainerStatuses }}
      containerStatuses:
      {{ range .spec.containers }}
      {{ $name := .name }}{{ $count := 0 }}
      {{ range $statuses }}{{ if eq .name $name }}{{ $count = .restartCount }}{{ end }}{{ end }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: {{ add1 $count }}
        lastState:
          terminated:
            exitCode: 137
            reason: RestartingAllContainers
            message: The container is removed because RestartAllContainers in place
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      {{ $name := .name }}{{ $count := 0 }}
      {{ range $initStatuses }}{{ if eq .name $name }}{{ $count = .restartCount }}{{ end }}{{ end }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: {{ add1 $count }}
        {{ if eq .restartPolicy "Always" }}
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
        {{ else }}
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
        {{ end }}
      {{ end }}
`

// kwokConfig concatenates the configuration, the stock stages and ours into
// the one file `kwok -c` reads (without stages kwok exits: no stages found).
//
// Pods deleted with grace period 0 are left out of the delete stage. The
// stage deletes by namespace/name, with no UID precondition, and strips
// every finalizer first: a late delete could hit a new pod of the same
// name, and a pod a finalizer holds (the operator's tracking finalizer)
// must wait for its owner, as on a real node, where the kubelet removes
// no finalizer.
func kwokConfig(stageSources map[string]string) (string, error) {
	docs := []string{kwokConfiguration}
	for _, f := range kwokStageFiles {
		s, ok := stageSources[f]
		if !ok {
			return "", fmt.Errorf("kwok stage %s not found", f)
		}
		if strings.HasSuffix(f, "pod-delete.yaml") {
			s = withoutGraceZero(s)
		}
		if strings.HasSuffix(f, "pod-complete.yaml") {
			s = withoutKeepRunning(s)
		}
		docs = append(docs, strings.TrimSpace(s)+"\n")
	}
	docs = append(docs, podCompleteAnnotated, podRestartInPlace)
	return strings.Join(docs, "---\n"), nil
}

// withoutGraceZero adds a selector term to the stock pod-delete stage. The
// term compares in the expression: KWOK matches a value against the
// strings of In/NotIn only when it is a string, a bool or an int, and the
// grace period reaches it as an int64, which would never match '0'.
func withoutGraceZero(stage string) string {
	const anchor = "    matchExpressions:\n"
	term := "    - key: '.metadata.deletionGracePeriodSeconds == 0'\n      operator: 'NotIn'\n      values:\n      - 'true'\n"
	return strings.Replace(stage, anchor, anchor+term, 1)
}

// withoutKeepRunning adds a selector term to the stock pod-complete stage:
// pods labelled KWOKKeepRunningLabel are left running.
func withoutKeepRunning(stage string) string {
	const anchor = "    matchExpressions:\n"
	term := "    - key: '.metadata.labels.\"" + KWOKKeepRunningLabel + "\"'\n      operator: 'DoesNotExist'\n"
	return strings.Replace(stage, anchor, anchor+term, 1)
}

// readKWOKStages reads the stock stages from the kwok module in the module
// cache, downloading it through the proxy if needed.
func readKWOKStages() (map[string]string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/kwok@"+KWOKVersion)
	cmd.Dir = os.TempDir() // outside any module, so no go.mod or go.sum is touched
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locating the kwok module: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download did not say where sigs.k8s.io/kwok@%s is", KWOKVersion)
	}
	stages := map[string]string{}
	for _, f := range kwokStageFiles {
		data, err := os.ReadFile(filepath.Join(mod.Dir, f))
		if err != nil {
			return nil, err
		}
		stages[f] = string(data)
	}
	return stages, nil
}
