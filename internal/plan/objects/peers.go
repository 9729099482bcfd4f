package objects

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// WaitContainerName is the name of the init container that holds a task
// until the peers it needs resolve.
const WaitContainerName = "muster-wait-peers"

// peerWaitSeconds bounds the wait: a peer that never comes is a failure the
// restart policy handles, not a pod stuck in Init for ever.
const peerWaitSeconds = 600

// waitScript waits for each argument, "host" or "host:port", to resolve
// and, with a port, to accept a connection. A framework that looks its peers
// up once at start-up crashes when a name does not resolve yet (the pod
// exists but has no address, or the Service has not published it), which is
// what the wait prevents. The port check needs bash; without it only names
// are waited for.
var waitScript = `deadline=$(( $(date +%s) + ` + strconv.Itoa(peerWaitSeconds) + ` ))
for peer in "$@"; do
  host=${peer%%:*}
  port=
  [ "$host" != "$peer" ] && port=${peer##*:}
  until getent hosts "$host" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "$host does not resolve" >&2; exit 1; fi
    sleep 1
  done
  if [ -n "$port" ] && command -v bash >/dev/null 2>&1; then
    until bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; do
      if [ "$(date +%s)" -ge "$deadline" ]; then echo "$host:$port does not accept connections" >&2; exit 1; fi
      sleep 1
    done
  fi
done
echo "peers ready: $*"`

// waitForPeers is the init container that runs waitScript for peers, in
// the image of the task's first container: an image that runs the framework
// has a shell and getent, and no other image need be pulled. It takes that
// container's resources and security context too, so it neither changes
// the pod's QoS class (an init container's requests count only as far as
// they exceed the containers') nor breaks a policy on how pods run.
func waitForPeers(main *corev1.Container, peers []string) corev1.Container {
	return corev1.Container{
		Name:                     WaitContainerName,
		Image:                    main.Image,
		ImagePullPolicy:          main.ImagePullPolicy,
		Command:                  append([]string{"sh", "-c", waitScript, "wait-peers"}, peers...),
		Resources:                *main.Resources.DeepCopy(),
		SecurityContext:          main.SecurityContext.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}
