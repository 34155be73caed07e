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
//   cgtviz_strided         any elementwise op, copy or fill over strided operands
//   cgtviz_strided_sum     sum over a strided a
//   cgtviz_strided_matmul  matmul over strided a, b and out
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

// Strided operands (views): ops.Geometry (traces/ops/strided.go) is the
// reference. cgt_geom is it field for field: CGT_MAX_RANK (ops.MaxRank)
// right-aligned dims, the leading ones of size 1 and stride 0, so a
// kernel walks every dim without a rank. Element i, in row-major order
// over shape, of an operand is at sum(idx[d] * stride[d]) from its first
// element. Passed by value: the launch's parameters hold it, and a
// captured graph keeps its own copy.
#define CGT_MAX_RANK 6

struct cgt_geom {
	i64 shape[CGT_MAX_RANK];
	i64 out[CGT_MAX_RANK];
	i64 a[CGT_MAX_RANK];
	i64 b[CGT_MAX_RANK];
};

// The op codes of cgtviz_strided (ptx.go's StridedOp says which kernel
// each is) and the forms of b (ops.BKind's order).
#define CGT_OP_ADD 0
#define CGT_OP_SUB 1
#define CGT_OP_MUL 2
#define CGT_OP_DIV 3
#define CGT_OP_MAX 4
#define CGT_OP_MIN 5
#define CGT_OP_NEG 6
#define CGT_OP_RELU 7
#define CGT_OP_EXP 8
#define CGT_OP_SQRT 9
#define CGT_OP_TANH 10
#define CGT_OP_ABS 11
#define CGT_OP_COPY 12
#define CGT_OP_FILL 13
#define CGT_B_TENSOR 0
#define CGT_B_BROADCAST 1

// cgtviz_strided: out's element at index tuple i is op(a's, y), y being
// b's element at i (CGT_B_TENSOR), b[0] (CGT_B_BROADCAST) or s (any other
// form: a scalar, or an op without b). Copy writes a's element and fill
// writes s (a is not read). One element per thread of a grid-stride loop,
// read before written, so out == a with the same strides is safe in
// place. The op is a parameter rather than one entry per op: strided
// launches are the uncommon path, and one entry keeps the module small.
extern "C" __global__ void cgtviz_strided(float *out, const float *a, const float *b, float s, i64 n,
		int op, int bform, cgt_geom g) {
	CGT_GRID_STRIDE(i, n) {
		i64 r = i, oo = 0, oa = 0, ob = 0;
#pragma unroll
		for (int d = CGT_MAX_RANK - 1; d >= 0; d--) {
			i64 c = r % g.shape[d];
			r /= g.shape[d];
			oo += c * g.out[d];
			oa += c * g.a[d];
			ob += c * g.b[d];
		}
		float y = s;
		if (bform == CGT_B_TENSOR) {
			y = b[ob];
		} else if (bform == CGT_B_BROADCAST) {
			y = b[0];
		}
		float x = op == CGT_OP_FILL ? s : a[oa];
		float v;
		switch (op) {
		case CGT_OP_ADD: v = cgt_add(x, y); break;
		case CGT_OP_SUB: v = cgt_sub(x, y); break;
		case CGT_OP_MUL: v = cgt_mul(x, y); break;
		case CGT_OP_DIV: v = cgt_div(x, y); break;
		case CGT_OP_MAX: v = cgt_max(x, y); break;
		case CGT_OP_MIN: v = cgt_min(x, y); break;
		case CGT_OP_NEG: v = cgt_neg(x); break;
		case CGT_OP_RELU: v = cgt_relu(x); break;
		case CGT_OP_EXP: v = cgt_exp(x); break;
		case CGT_OP_SQRT: v = cgt_sqrt(x); break;
		case CGT_OP_TANH: v = cgt_tanh(x); break;
		case CGT_OP_ABS: v = cgt_abs(x); break;
		default: v = x; break; // copy, and fill (x is s)
		}
		out[oo] = v;
	}
}

// cgtviz_strided_sum is cgtviz_sum with a's elements placed by g.a over
// g.shape; launched as one block of CGT_SUM_THREADS threads.
extern "C" __global__ void cgtviz_strided_sum(float *out, const float *a, i64 n, cgt_geom g) {
	__shared__ double part[CGT_SUM_THREADS];
	double acc = 0.0;
	for (i64 i = threadIdx.x; i < n; i += CGT_SUM_THREADS) {
		i64 r = i, oa = 0;
#pragma unroll
		for (int d = CGT_MAX_RANK - 1; d >= 0; d--) {
			oa += (r % g.shape[d]) * g.a[d];
			r /= g.shape[d];
		}
		acc += (double)a[oa];
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

// cgtviz_strided_matmul is cgtviz_matmul with a [m, kd], b [kd, cols] and
// out [m, cols] placed by the last two strides of g.a, g.b and g.out.
extern "C" __global__ void cgtviz_strided_matmul(float *out, const float *a, const float *b, i64 m, i64 kd, i64 cols,
		cgt_geom g) {
	i64 col = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	i64 row = (i64)blockIdx.y * blockDim.y + threadIdx.y;
	if (row >= m || col >= cols) {
		return;
	}
	const int R = CGT_MAX_RANK - 2;
	float acc = 0.0f;
	for (i64 k = 0; k < kd; k++) {
		acc = fmaf(a[row * g.a[R] + k * g.a[R + 1]], b[k * g.b[R] + col * g.b[R + 1]], acc);
	}
	out[row * g.out[R] + col * g.out[R + 1]] = acc;
}
