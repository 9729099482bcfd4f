package cmdutil

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobError turns an API error about the job namespace/name into one that
// names the job and says what to do. Other errors pass through.
func JobError(err error, namespace, name string) error {
	if err == nil {
		return nil
	}
	job := fmt.Sprintf("trainingjob %s/%s", namespace, name)
	if name == "" {
		job = "trainingjobs of namespace " + namespace
	}
	var status apierrors.APIStatus
	var urlErr *url.Error
	switch {
	case errors.Is(err, ErrNoCluster):
		return err
	case errors.As(err, &urlErr) && !apierrors.IsNotFound(err):
		return fmt.Errorf("cannot reach the API server (%s %s): %w; check that the cluster is up, and --context or --kubeconfig",
			urlErr.Op, redact(urlErr.URL), urlErr.Err)
	case isNoKind(err):
		return fmt.Errorf("%s: the cluster does not know TrainingJobs: install Muster (its CRD is in config/crd) or check --context", job)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s not found: `muster get -n %s` lists the namespace's jobs, `muster get -A` every namespace's", job, namespace)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: %s: ask a cluster admin for a Role that grants it on trainingjobs.muster.dev", job, apiMessage(err))
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s changed while muster was updating it: run the command again", job)
	case apierrors.IsInvalid(err) && errors.As(err, &status):
		return &InvalidError{Job: job, Causes: causes(status.Status())}
	}
	return fmt.Errorf("%s: %w", job, err)
}

func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// isNoKind is whether the server has no TrainingJob resource.
func isNoKind(err error) bool { return apimeta.IsNoMatchError(err) }

// InvalidError is the API server refusing a job, with each field it named.
type InvalidError struct {
	Job    string
	Causes []metav1.StatusCause
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is invalid: fix these fields and try again:", e.Job)
	for _, c := range e.Causes {
		field := c.Field
		if field == "" {
			field = "(the job)"
		}
		fmt.Fprintf(&b, "\n  %s: %s", field, c.Message)
	}
	return b.String()
}

func causes(s metav1.Status) []metav1.StatusCause {
	if s.Details != nil && len(s.Details.Causes) > 0 {
		return s.Details.Causes
	}
	return []metav1.StatusCause{{Message: s.Message}}
}

// redact keeps the scheme and host of an address: its query may hold
// nothing useful to the reader.
func redact(address string) string {
	u, err := url.Parse(address)
	if err != nil {
		return address
	}
	return u.Scheme + "://" + u.Host
}
