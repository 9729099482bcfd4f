package testutil

import (
	"hash/fnv"
	"math/rand/v2"
)

// FuzzSource is a rand.Source that replays a fuzzer's input, so that a
// randomized test written against *rand.Rand becomes a fuzz target whose
// input bytes make its choices.
//
// Each Uint64 is one input byte placed where math/rand reads it: the top
// byte for IntN, the lowest byte for a power-of-two IntN (a mask), and the
// top byte of the low 53 bits for Float64. So one byte decides one choice
// whatever the method, in order (byte 0 is the smallest choice), and a
// mutated byte changes one choice rather than scrambling the rest. Bit 32
// is always set: IntN rejects a draw whose product with n has tiny low
// bits, and without it a zero byte would be rejected and make no choice.
//
// Once the input runs out the source goes on from a generator seeded by
// the input: math/rand's unbiased IntN may draw again, and a source that
// kept returning the same value would loop forever.
type FuzzSource struct {
	data []byte
	tail *rand.PCG
}

// NewFuzzSource replays data.
func NewFuzzSource(data []byte) *FuzzSource {
	h := fnv.New64a()
	_, _ = h.Write(data)
	return &FuzzSource{data: data, tail: rand.NewPCG(h.Sum64(), uint64(len(data)))}
}

// Uint64 is the next input byte, repeated, or else a pseudo-random value.
func (s *FuzzSource) Uint64() uint64 {
	if len(s.data) == 0 {
		return s.tail.Uint64()
	}
	b := uint64(s.data[0])
	s.data = s.data[1:]
	return b<<56 | b<<45 | 1<<32 | b
}

// Exhausted reports whether every input byte has been used, so a target
// can size its run by its input: the fuzzer then grows the run by growing
// the input.
func (s *FuzzSource) Exhausted() bool { return len(s.data) == 0 }

// FuzzRand is a *rand.Rand over NewFuzzSource(data), and the source.
func FuzzRand(data []byte) (*rand.Rand, *FuzzSource) {
	src := NewFuzzSource(data)
	return rand.New(src), src
}
