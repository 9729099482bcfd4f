// Package netsetup builds the node's private pod network: a dedicated
// network namespace holding a Linux bridge, and per pod a network namespace
// joined to the bridge by a veth pair. Nothing is ever added to the root
// network namespace; pods reach host services only through the forwarders
// the node opens inside each pod namespace (see forward.go).
package netsetup

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// NetnsDir is where named network namespaces live (as with "ip netns").
const NetnsDir = "/run/netns"

// BridgeName is the bridge inside the node's bridge namespace.
const BridgeName = "br0"

// BridgeNS is the name of the namespace that holds the node's bridge.
func BridgeNS(node string) string { return "muster-" + node + "-net" }

// PodNS is the name of a pod's network namespace.
func PodNS(node, podUID string) string { return "muster-" + node + "-pod-" + shortID(podUID) }

// HostVeth is the bridge-side end of a pod's veth pair; it lives in the
// bridge namespace, so only the 15-byte interface name limit matters.
func HostVeth(podUID string) string { return "v" + shortID(podUID) }

func shortID(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return hex.EncodeToString(sum[:4])
}

// Owned reports whether a namespace name was made by the given node. The
// exact shape is matched so another node whose name shares a prefix is left
// alone.
func Owned(node, name string) bool {
	if name == BridgeNS(node) {
		return true
	}
	re := regexp.MustCompile("^" + regexp.QuoteMeta("muster-"+node+"-pod-") + "[0-9a-f]{8}$")
	return re.MatchString(name)
}
