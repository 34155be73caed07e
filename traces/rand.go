package traces

// Rand is the value generator of init "rand", shared by every backend so that
// the simulated device and the GPU fill a tensor with the same numbers
// without sharing any state: the value of element i of a tensor with seed s
// depends on (s, i) alone.
//
// The generator is counter-based. With all arithmetic modulo 2^64:
//
//	k = uint64(s)*0x9E3779B97F4A7C15 + uint64(i)*0xD1B54A32D192ED03 + 0x2545F4914F6CDD1D
//	k = (k ^ k>>30) * 0xBF58476D1CE4E5B9
//	k = (k ^ k>>27) * 0x94D049BB133111EB
//	k =  k ^ k>>31
//	value = float32(k >> 40) / 2^24
//
// The last three lines are SplitMix64's finaliser. The value keeps the top 24
// bits, so it is exactly representable in float32 and lies in [0, 1).
func Rand(seed int64, i int64) float32 {
	k := uint64(seed)*0x9E3779B97F4A7C15 + uint64(i)*0xD1B54A32D192ED03 + 0x2545F4914F6CDD1D
	k = (k ^ k>>30) * 0xBF58476D1CE4E5B9
	k = (k ^ k>>27) * 0x94D049BB133111EB
	k ^= k >> 31
	return float32(k>>40) / (1 << 24)
}

// FillRand fills dst with Rand(seed, 0), Rand(seed, 1), ...
func FillRand(dst []float32, seed int64) {
	for i := range dst {
		dst[i] = Rand(seed, int64(i))
	}
}
