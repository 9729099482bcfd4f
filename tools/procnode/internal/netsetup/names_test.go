package netsetup

import "testing"

func TestNames(t *testing.T) {
	if got := BridgeNS("node-a"); got != "muster-node-a-net" {
		t.Errorf("BridgeNS = %q", got)
	}
	pod := PodNS("node-a", "0b7e8f4a-1111-2222-3333-444455556666")
	if len(pod) != len("muster-node-a-pod-")+8 {
		t.Errorf("PodNS = %q", pod)
	}
	if v := HostVeth("0b7e8f4a-1111-2222-3333-444455556666"); len(v) > 15 {
		t.Errorf("veth name %q is longer than IFNAMSIZ-1", v)
	}
	if PodNS("n", "uid-1") == PodNS("n", "uid-2") {
		t.Error("different pods share a namespace name")
	}
}

func TestOwned(t *testing.T) {
	mine := []string{"muster-n-net", PodNS("n", "u1")}
	for _, name := range mine {
		if !Owned("n", name) {
			t.Errorf("%s should belong to node n", name)
		}
	}
	// Names of other nodes (even with a shared prefix) and of other tools.
	others := []string{"muster-n-pod-net", PodNS("n-pod", "u1"), PodNS("m", "u1"), "cni-1234", "muster-n-pod-xyz"}
	for _, name := range others {
		if Owned("n", name) {
			t.Errorf("%s must not belong to node n", name)
		}
	}
}
