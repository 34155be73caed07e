// kernels.cu: the float32 kernels of cgtviz's op set, one extern "C"
// __global__ function per kernel and, for binary kernels, per form of
// operand b. The symbol names are part of the contract with ptx.go, which
// lists them; ptx_test.go checks that the committed kernels.ptx defines
// every one.
//
// Names:
//   cgtviz_<op>_tensor     binary op, b a tensor of n elements
//   cgtviz_<op>_broadcast  binary op, b a tensor of one element
//   cgtviz_<op>_scalar     binary op, b the number s
//   cgtviz_<op>            unary op (neg relu exp sqrt tanh abs)
//   cgtviz_matmul          out[m,cols] = a[m,kd] x b[kd,cols]
//   cgtviz_sum             out[0] = sum of a[0..n)
//   cgtviz_copy            out[i] = a[i]
//   cgtviz_fill            out[i] = s
//   cgtviz_rand            out[i] = traces.Rand(seed, first+i)   (tensor init)
//   cgtviz_arange          out[i] = (float)(first+i)             (tensor init)
//
// The file includes no header, so that nvcc and NVRTC both compile it as it
// is. Regenerate the PTX with (make ptx):
//   nvcc -arch=compute_75 -ptx -o engine/device/cuda/kernels.ptx engine/device/cuda/kernels.cu
//
// Elementwise kernels use grid-stride loops, so any grid covers any n, and
// each element is read before it is written by the same thread, so
// out == a (in place) is safe.

typedef long long i64;

#define CGT_GRID_STRIDE(i, n) \
	for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gridDim.x)

__device__ __forceinline__ float cgt_add(float x, float y) { return x + y; }
__device__ __forceinline__ float cgt_sub(float x, float y) { return x - y; }
__device__ __forceinline__ float cgt_mul(float x, float y) { return x * y; }
__device__ __forceinline__ float cgt_div(float x, float y) { return x / y; }
// max and min propagate NaN, as torch.maximum and torch.minimum do (fmaxf
// would drop it).
__device__ __forceinline__ float cgt_max(float x, float y) { return (x != x || y != y) ? (x + y) : (x > y ? x : y); }
__device__ __forceinline__ float cgt_min(float x, float y) { return (x != x || y != y) ? (x + y) : (x < y ? x : y); }

#define CGT_BINARY(op)                                                                                 \
	extern "C" __global__ void cgtviz_##op##_tensor(float *out, const float *a, const float *b, i64 n) { \
		CGT_GRID_STRIDE(i, n) { out[i] = cgt_##op(a[i], b[i]); }                                       \
	}                                                                                                  \
	extern "C" __global__ void cgtviz_##op##_broadcast(float *out, const float *a, const float *b, i64 n) { \
		CGT_GRID_STRIDE(i, n) { out[i] = cgt_##op(a[i], b[0]); }                                       \
	}                                                                                                  \
	extern "C" __global__ void cgtviz_##op##_scalar(float *out, const float *a, float s, i64 n) {      \
		CGT_GRID_STRIDE(i, n) { out[i] = cgt_##op(a[i], s); }                                          \
	}

CGT_BINARY(add)
CGT_BINARY(sub)
CGT_BINARY(mul)
CGT_BINARY(div)
CGT_BINARY(max)
CGT_BINARY(min)

__device__ __forceinline__ float cgt_neg(float x) { return -x; }
// relu keeps NaN, as torch.relu does.
__device__ __forceinline__ float cgt_relu(float x) { return x > 0.0f ? x : (x != x ? x : 0.0f); }
__device__ __forceinline__ float cgt_exp(float x) { return expf(x); }
__device__ __forceinline__ float cgt_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float cgt_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float cgt_abs(float x) { return fabsf(x); }

#define CGT_UNARY(op)                                                               \
	extern "C" __global__ void cgtviz_##op(float *out, const float *a, i64 n) {    \
		CGT_GRID_STRIDE(i, n) { out[i] = cgt_##op(a[i]); }                         \
	}

CGT_UNARY(neg)
CGT_UNARY(relu)
CGT_UNARY(exp)
CGT_UNARY(sqrt)
CGT_UNARY(tanh)
CGT_UNARY(abs)

extern "C" __global__ void cgtviz_copy(float *out, const float *a, i64 n) {
	CGT_GRID_STRIDE(i, n) { out[i] = a[i]; }
}

extern "C" __global__ void cgtviz_fill(float *out, float s, i64 n) {
	CGT_GRID_STRIDE(i, n) { out[i] = s; }
}

// cgtviz_rand is traces.Rand (traces/rand.go) bit for bit: a splitmix64
// finaliser of seed and the element's index in 64-bit unsigned integer
// arithmetic (wrapping as Go's uint64 does), whose top 24 bits, exact in a
// float, are scaled by 2^-24 (exact too). The engine initialises a
// tensor's rand values with it on the GPU instead of generating them on
// the host and copying them.
extern "C" __global__ void cgtviz_rand(float *out, i64 n, i64 seed, i64 first) {
	CGT_GRID_STRIDE(i, n) {
		unsigned long long k = (unsigned long long)seed * 0x9E3779B97F4A7C15ULL +
			(unsigned long long)(first + i) * 0xD1B54A32D192ED03ULL + 0x2545F4914F6CDD1DULL;
		k = (k ^ (k >> 30)) * 0xBF58476D1CE4E5B9ULL;
		k = (k ^ (k >> 27)) * 0x94D049BB133111EBULL;
		k ^= k >> 31;
		out[i] = __fmul_rn((float)(k >> 40), 5.9604644775390625e-8f); // 2^-24
	}
}

// cgtviz_arange writes first, first+1, ... rounded to float as Go's
// float32(int64) rounds (to nearest even).
extern "C" __global__ void cgtviz_arange(float *out, i64 n, i64 first) {
	CGT_GRID_STRIDE(i, n) { out[i] = (float)(first + i); }
}

// cgtviz_matmul: one thread per element of out, launched with a 2-D grid of
// 16x16 blocks (x over columns, y over rows). The dot product runs in k
// order with fused multiply-adds, the order a plain CPU loop uses, so small
// products match a CPU reference closely. Simple rather than fast: the op
// set's matrices are small.
extern "C" __global__ void cgtviz_matmul(float *out, const float *a, const float *b, i64 m, i64 kd, i64 cols) {
	i64 col = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	i64 row = (i64)blockIdx.y * blockDim.y + threadIdx.y;
	if (row >= m || col >= cols) {
		return;
	}
	float acc = 0.0f;
	for (i64 k = 0; k < kd; k++) {
		acc = fmaf(a[row * kd + k], b[k * cols + col], acc);
	}
	out[row * cols + col] = acc;
}

// cgtviz_sum must be launched as one block of CGT_SUM_THREADS threads. Each
// thread adds a strided share of a in double precision, then the block
// combines the partial sums in a fixed tree order: the result is the same
// on every run (no atomics) and close to the exact sum, rounded once to
// float at the end.
#define CGT_SUM_THREADS 256

extern "C" __global__ void cgtviz_sum(float *out, const float *a, i64 n) {
	__shared__ double part[CGT_SUM_THREADS];
	double acc = 0.0;
	for (i64 i = threadIdx.x; i < n; i += CGT_SUM_THREADS) {
		acc += (double)a[i];
	}
	part[threadIdx.x] = acc;
	__syncthreads();
	for (int w = CGT_SUM_THREADS / 2; w > 0; w /= 2) {
		if (threadIdx.x < w) {
			part[threadIdx.x] += part[threadIdx.x + w];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		out[0] = (float)part[0];
	}
}
