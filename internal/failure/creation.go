package failure

import (
	"errors"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// CreationErrorOf classifies an error from creating a task's pod:
//   - the API server does not know the object yet (a CRD or webhook being
//     installed) or a quota is exhausted: PodCreationTransientError. The
//     caller simply tries again later and the task attempt does not end;
//     quota errors are checked first because they arrive as Forbidden;
//   - the request was refused as malformed or not allowed:
//     PodCreationUnknownError, because it may be the operator's doing as
//     much as the template's;
//   - the pod is invalid or too large: PodCreationPermanentError, since
//     the same template fails the same way every time;
//   - the connection was reset or cut mid-request: PodCreationUnknownError,
//     because an oversized request can end that way too;
//   - anything else (timeouts, throttling, server errors):
//     PodCreationTransientError.
//
// A nil error is transient too: there is nothing to hold against the task.
func CreationErrorOf(err error) Completion {
	if err == nil {
		return mustPredefined(CodePodCreationTransientError, "")
	}
	text := err.Error()
	msg := shorten(text)
	switch {
	case strings.Contains(text, "object provided is unrecognized"), strings.Contains(text, "exceeded quota"):
		return mustPredefined(CodePodCreationTransientError, msg)
	case apierrors.IsBadRequest(err), apierrors.IsForbidden(err):
		return mustPredefined(CodePodCreationUnknownError, msg)
	case apierrors.IsInvalid(err), apierrors.IsRequestEntityTooLargeError(err):
		return mustPredefined(CodePodCreationPermanentError, msg)
	case connectionCut(err):
		return mustPredefined(CodePodCreationUnknownError, msg)
	default:
		return mustPredefined(CodePodCreationTransientError, msg)
	}
}

// connectionCut reports whether err is a connection reset or an early end
// of the response.
func connectionCut(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection reset by peer") || strings.HasSuffix(msg, "EOF")
}
