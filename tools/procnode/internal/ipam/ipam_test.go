package ipam

import (
	"errors"
	"testing"
)

func TestAllocate(t *testing.T) {
	a, err := New("10.244.0.7/29") // host bits are masked away
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Gateway().String(); got != "10.244.0.1" {
		t.Fatalf("gateway = %s", got)
	}
	var got []string
	for _, o := range []string{"a", "b", "c", "d", "e"} {
		ip, err := a.Allocate(o)
		if err != nil {
			t.Fatalf("allocate %s: %v", o, err)
		}
		got = append(got, ip.String())
	}
	want := []string{"10.244.0.2", "10.244.0.3", "10.244.0.4", "10.244.0.5", "10.244.0.6"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("allocations = %v, want %v", got, want)
		}
	}
	if _, err := a.Allocate("f"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("expected exhaustion, got %v", err)
	}
	if ip, _ := a.Allocate("c"); ip.String() != "10.244.0.4" {
		t.Fatalf("re-allocating for the same owner gave %s", ip)
	}
	a.Release("b")
	ip, err := a.Allocate("g")
	if err != nil || ip.String() != "10.244.0.3" {
		t.Fatalf("after release got %v, %v", ip, err)
	}
}

func TestRoundRobin(t *testing.T) {
	a, _ := New("10.0.0.0/24")
	x, _ := a.Allocate("x")
	a.Release("x")
	y, _ := a.Allocate("y")
	if x == y {
		t.Fatalf("released address %s reused immediately", x)
	}
}

func TestInvalid(t *testing.T) {
	for _, c := range []string{"nope", "fd00::/64", "10.0.0.0/30"} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%q) should fail", c)
		}
	}
}
