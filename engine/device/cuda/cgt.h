//go:build cuda

// cgt.h: the C side of the CUDA device (cgt.c), for the Go files of this
// package that call it.

#ifndef CGTVIZ_CGT_H
#define CGTVIZ_CGT_H

#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>

// Kernel signatures: how a kernel's parameters are laid out (kernels.cu).
enum {
	CGT_SIG_BINARY = 0, // (float *out, const float *a, const float *b, i64 n)
	CGT_SIG_SCALAR = 1, // (float *out, const float *a, float s, i64 n)
	CGT_SIG_UNARY = 2,  // (float *out, const float *a, i64 n)
	CGT_SIG_FILL = 3,   // (float *out, float s, i64 n)
	CGT_SIG_MATMUL = 4, // (float *out, const float *a, const float *b, i64 m, i64 kd, i64 cols)
	// Strided operands (cgt_launch_strided), the geometry last, by value:
	CGT_SIG_STRIDED = 5,        // (out, a, b, float s, i64 n, int op, int bform, cgt_geom g)
	CGT_SIG_STRIDED_SUM = 6,    // (out, a, i64 n, cgt_geom g)
	CGT_SIG_STRIDED_MATMUL = 7  // (out, a, b, i64 m, i64 kd, i64 cols, cgt_geom g)
};

// CGT_MAX_RANK and cgt_geom are kernels.cu's, and ops.MaxRank and
// ops.Geometry field for field (launch.go checks the size).
#define CGT_MAX_RANK 6

typedef struct {
	long long shape[CGT_MAX_RANK];
	long long out[CGT_MAX_RANK];
	long long a[CGT_MAX_RANK];
	long long b[CGT_MAX_RANK];
} cgt_geom;

// Tensor inits (cgt_init): which kernel and parameters.
enum {
	CGT_INIT_FILL = 0,  // cgtviz_fill (float *out, float s, i64 n)
	CGT_INIT_RAND = 1,  // cgtviz_rand (float *out, i64 n, i64 seed, i64 first)
	CGT_INIT_ARANGE = 2 // cgtviz_arange (float *out, i64 n, i64 first)
};

// cgt_kernel_params has the layout of CUDA 12's CUDA_KERNEL_NODE_PARAMS_v2:
// the 11.8 struct plus two trailing fields, so it can receive either form.
typedef struct {
	CUfunction func;
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	void **kernelParams;
	void **extra;
	void *kern;
	CUcontext ctx;
} cgt_kernel_params;

// cgt_staging is the device's pinned buffer for host-to-device copies
// (cgt_upload): buf holds size bytes; done is recorded after the last copy
// out of it.
typedef struct {
	void *buf;
	size_t size;
	CUevent done;
} cgt_staging;

CUresult cgt_bind(CUcontext ctx);
CUresult cgt_current(CUcontext *ctx);
CUresult cgt_launch(CUcontext ctx, CUfunction fn, int sig,
	unsigned int gx, unsigned int gy, unsigned int bx, unsigned int by, CUstream st,
	CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, float s,
	long long n, long long m, long long kd, long long cols);
CUresult cgt_launch_strided(CUcontext ctx, CUfunction fn, int sig,
	unsigned int gx, unsigned int gy, unsigned int bx, unsigned int by, CUstream st,
	CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, float s,
	long long n, long long m, long long kd, long long cols, int op, int bform, const cgt_geom *g);
CUresult cgt_memcpy_dtod(CUcontext ctx, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream st);
CUresult cgt_mem_alloc(CUcontext ctx, size_t size, CUdeviceptr *p);
CUresult cgt_module_load(CUcontext ctx, const char *image, CUmodule *mod, char *log, size_t logSize);
CUresult cgt_module_function(CUmodule mod, const char *name, CUfunction *fn);
CUresult cgt_module_unload(CUcontext ctx, CUmodule mod);
CUresult cgt_begin_capture(CUcontext ctx, CUstream st);
CUresult cgt_end_capture(CUcontext ctx, CUstream st, uint64_t *g);
CUresult cgt_instantiate(CUcontext ctx, uint64_t g, uint64_t *e);
CUresult cgt_graph_launch(CUcontext ctx, uint64_t e, CUstream st);
CUresult cgt_exec_update_copy(CUcontext ctx, uint64_t g, uint64_t e, CUdeviceptr dst, CUdeviceptr src, size_t bytes);
CUresult cgt_graph_destroy(CUcontext ctx, uint64_t g);
CUresult cgt_exec_destroy(CUcontext ctx, uint64_t e);
CUresult cgt_graph_dot(CUcontext ctx, uint64_t g, const char *path);
CUresult cgt_graph_nodes(CUcontext ctx, uint64_t g, CUgraphNode *nodes, size_t *n);
CUresult cgt_node_deps(CUgraphNode node, CUgraphNode *deps, size_t *n);
CUresult cgt_node_type(CUgraphNode node, int *t);
void cgt_resolve(void);
CUresult cgt_kernel_node(CUgraphNode node, cgt_kernel_params *p);
const char *cgt_func_name(CUfunction fn);
CUresult cgt_memcpy_node(CUgraphNode node, CUDA_MEMCPY3D *p);
CUresult cgt_memset_node(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *p);
const char *cgt_error_name(CUresult r);
CUresult cgt_raw_graph_launch(uint64_t e, CUstream st);
CUresult cgt_raw_stream_sync(CUstream st);
CUresult cgt_stream_create(CUcontext ctx, unsigned int flags, CUstream *st);
CUresult cgt_stream_destroy(CUcontext ctx, CUstream st);
CUresult cgt_event_create(CUcontext ctx, CUevent *ev);
CUresult cgt_event_destroy(CUcontext ctx, CUevent ev);
CUresult cgt_wait_stream(CUcontext ctx, CUstream st, CUstream other, CUevent ev);
CUresult cgt_mem_free(CUcontext ctx, CUdeviceptr p);
CUresult cgt_init(CUcontext ctx, CUfunction fn, int kind, unsigned int gx, unsigned int bx,
		CUdeviceptr out, float s, long long n, long long seed, long long first,
		CUstream s0, CUstream s1, CUevent e0, CUevent e1, int fence);
CUresult cgt_staging_free(CUcontext ctx, cgt_staging *sg);
CUresult cgt_upload(CUcontext ctx, cgt_staging *sg, CUdeviceptr dst, const void *src, size_t bytes,
	CUstream s0, CUstream s1, CUevent e1, int fence);
CUresult cgt_download(CUcontext ctx, void *dst, CUdeviceptr src, size_t bytes,
	CUstream s0, CUstream s1, CUevent e1, int fence);
CUresult cgt_copy_spans(CUcontext ctx, size_t n, const CUdeviceptr *dst, const CUdeviceptr *src,
	const size_t *bytes, CUstream s0, CUstream s1, CUevent e0, CUevent e1);
CUresult cgt_graph_copies(CUcontext ctx, uint64_t g, CUdeviceptr *dst, CUdeviceptr *src, size_t *bytes, size_t *n);
CUresult cgt_graph_upload(CUcontext ctx, uint64_t e, CUstream st);
CUstream cgt_legacy_stream(void);
CUstream cgt_per_thread_stream(void);

#endif
