//go:build cuda

// cgt.c: the C side of the CUDA device. It holds the driver calls that
// gorgonia.org/cu does not wrap (stream capture, graphs, graph
// introspection, error names) and those of the hot path (kernel launch,
// device-to-device copy, graph launch), which make the device's context
// current and call the driver in one cgo call, with no heap allocation.
//
// It builds against the CUDA 11.8 cuda.h that tools/cuda-sdk.sh installs.
// Newer entry points are resolved at run time with cuGetProcAddress, and
// only for introspection: cuGraphKernelNodeGetParams in its CUDA 12 form
// and cuFuncGetName (12.3).

#include <string.h>

#include <stdlib.h>
#include "cgt.h"

// cgt_bind makes ctx current on the calling thread unless it already is.
// Every entry point of this file starts with it, so a goroutine that moved
// to another OS thread between two calls still runs in the right context.
CUresult cgt_bind(CUcontext ctx) {
	CUcontext cur = NULL;
	CUresult r = cuCtxGetCurrent(&cur);
	if (r != CUDA_SUCCESS) return r;
	if (cur == ctx) return CUDA_SUCCESS;
	return cuCtxSetCurrent(ctx);
}

// cgt_launch launches fn with the parameters of its signature. The
// parameter array lives on this C stack frame: cuLaunchKernel copies the
// values before it returns, so nothing is allocated per launch.
CUresult cgt_launch(CUcontext ctx, CUfunction fn, int sig,
		unsigned int gx, unsigned int gy, unsigned int bx, unsigned int by, CUstream st,
		CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, float s,
		long long n, long long m, long long kd, long long cols) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	void *args[6];
	switch (sig) {
	case CGT_SIG_BINARY:
		args[0] = &out; args[1] = &a; args[2] = &b; args[3] = &n;
		break;
	case CGT_SIG_SCALAR:
		args[0] = &out; args[1] = &a; args[2] = &s; args[3] = &n;
		break;
	case CGT_SIG_UNARY:
		args[0] = &out; args[1] = &a; args[2] = &n;
		break;
	case CGT_SIG_FILL:
		args[0] = &out; args[1] = &s; args[2] = &n;
		break;
	case CGT_SIG_MATMUL:
		args[0] = &out; args[1] = &a; args[2] = &b; args[3] = &m; args[4] = &kd; args[5] = &cols;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return cuLaunchKernel(fn, gx, gy, 1, bx, by, 1, 0, st, args, NULL);
}

// cgt_launch_strided launches a kernel over strided operands: the
// geometry is the last parameter, by value (cuLaunchKernel copies its
// bytes, as the others', before it returns).
CUresult cgt_launch_strided(CUcontext ctx, CUfunction fn, int sig,
		unsigned int gx, unsigned int gy, unsigned int bx, unsigned int by, CUstream st,
		CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, float s,
		long long n, long long m, long long kd, long long cols, int op, int bform, const cgt_geom *g) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	cgt_geom geom = *g;
	void *args[8];
	switch (sig) {
	case CGT_SIG_STRIDED:
		args[0] = &out; args[1] = &a; args[2] = &b; args[3] = &s; args[4] = &n;
		args[5] = &op; args[6] = &bform; args[7] = &geom;
		break;
	case CGT_SIG_STRIDED_SUM:
		args[0] = &out; args[1] = &a; args[2] = &n; args[3] = &geom;
		break;
	case CGT_SIG_STRIDED_MATMUL:
		args[0] = &out; args[1] = &a; args[2] = &b; args[3] = &m; args[4] = &kd; args[5] = &cols;
		args[6] = &geom;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return cuLaunchKernel(fn, gx, gy, 1, bx, by, 1, 0, st, args, NULL);
}

CUresult cgt_memcpy_dtod(CUcontext ctx, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream st) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuMemcpyDtoDAsync(dst, src, bytes, st);
}

// cgt_mem_alloc runs cuMemAlloc in relaxed capture mode, as PyTorch's
// allocator does, so that the graph pool can grow while a stream of this
// thread is capturing (thread-local mode would refuse the call).
CUresult cgt_mem_alloc(CUcontext ctx, size_t size, CUdeviceptr *p) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	r = cuThreadExchangeStreamCaptureMode(&mode);
	if (r != CUDA_SUCCESS) return r;
	r = cuMemAlloc(p, size);
	cuThreadExchangeStreamCaptureMode(&mode);
	return r;
}

CUresult cgt_module_load(CUcontext ctx, const char *image, CUmodule *mod, char *log, size_t logSize) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[2] = {log, (void *)(uintptr_t)logSize};
	return cuModuleLoadDataEx(mod, image, 2, opts, vals);
}

CUresult cgt_module_function(CUmodule mod, const char *name, CUfunction *fn) {
	return cuModuleGetFunction(fn, mod, name);
}

CUresult cgt_module_unload(CUcontext ctx, CUmodule mod) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuModuleUnload(mod);
}

CUresult cgt_current(CUcontext *ctx) { return cuCtxGetCurrent(ctx); }

// cgt_captures holds the streams this thread began capturing and has not
// ended. Thread-local capture must end on the thread that began it, and the
// driver, asked from another thread, fails with
// CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD and ends the capture too (seen on
// driver 580). Checking first keeps the capture for its own thread.
#define CGT_MAX_CAPTURES 16
static __thread CUstream cgt_captures[CGT_MAX_CAPTURES];

static int cgt_capture_slot(CUstream st) {
	for (int i = 0; i < CGT_MAX_CAPTURES; i++) {
		if (cgt_captures[i] == st) return i;
	}
	return -1;
}

CUresult cgt_begin_capture(CUcontext ctx, CUstream st) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	int slot = cgt_capture_slot(NULL);
	if (slot < 0) return CUDA_ERROR_NOT_SUPPORTED;
	r = cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	if (r == CUDA_SUCCESS) cgt_captures[slot] = st;
	return r;
}

CUresult cgt_end_capture(CUcontext ctx, CUstream st, uint64_t *g) {
	*g = 0;
	int slot = cgt_capture_slot(st);
	if (slot < 0) return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	CUgraph graph = NULL;
	r = cuStreamEndCapture(st, &graph);
	// From its own thread, cuStreamEndCapture ends the capture whatever it
	// returns.
	cgt_captures[slot] = NULL;
	*g = (uint64_t)(uintptr_t)graph;
	return r;
}

CUresult cgt_instantiate(CUcontext ctx, uint64_t g, uint64_t *e) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	CUgraphExec exec = NULL;
	r = cuGraphInstantiateWithFlags(&exec, (CUgraph)(uintptr_t)g, 0);
	*e = (uint64_t)(uintptr_t)exec;
	return r;
}

CUresult cgt_graph_launch(CUcontext ctx, uint64_t e, CUstream st) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuGraphLaunch((CUgraphExec)(uintptr_t)e, st);
}

// cgt_exec_update_copy finds the memcpy node of graph g that writes dst and
// sets its source in the executable graph e. The engine captures each input
// copy into the graph, so this runs only when an input moved.
CUresult cgt_exec_update_copy(CUcontext ctx, uint64_t g, uint64_t e, CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	size_t n = 0;
	r = cuGraphGetNodes((CUgraph)(uintptr_t)g, NULL, &n);
	if (r != CUDA_SUCCESS) return r;
	CUgraphNode small[64];
	CUgraphNode *nodes = small;
	if (n > 64) {
		nodes = (CUgraphNode *)malloc(n * sizeof(CUgraphNode));
		if (nodes == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = cuGraphGetNodes((CUgraph)(uintptr_t)g, nodes, &n);
	CUresult found = CUDA_ERROR_NOT_FOUND;
	for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
		CUgraphNodeType t;
		if (cuGraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS || t != CU_GRAPH_NODE_TYPE_MEMCPY) continue;
		CUDA_MEMCPY3D p;
		if (cuGraphMemcpyNodeGetParams(nodes[i], &p) != CUDA_SUCCESS) continue;
		if (p.dstDevice != dst) continue;
		if (p.WidthInBytes * (p.Height ? p.Height : 1) * (p.Depth ? p.Depth : 1) != bytes) {
			found = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		p.srcDevice = src;
		found = cuGraphExecMemcpyNodeSetParams((CUgraphExec)(uintptr_t)e, nodes[i], &p, ctx);
		break;
	}
	if (nodes != small) free(nodes);
	return r != CUDA_SUCCESS ? r : found;
}

CUresult cgt_graph_destroy(CUcontext ctx, uint64_t g) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuGraphDestroy((CUgraph)(uintptr_t)g);
}

CUresult cgt_exec_destroy(CUcontext ctx, uint64_t e) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuGraphExecDestroy((CUgraphExec)(uintptr_t)e);
}

CUresult cgt_graph_dot(CUcontext ctx, uint64_t g, const char *path) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	unsigned int flags = CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS |
		CU_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS |
		CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS;
	return cuGraphDebugDotPrint((CUgraph)(uintptr_t)g, path, flags);
}

CUresult cgt_graph_nodes(CUcontext ctx, uint64_t g, CUgraphNode *nodes, size_t *n) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuGraphGetNodes((CUgraph)(uintptr_t)g, nodes, n);
}

CUresult cgt_node_deps(CUgraphNode node, CUgraphNode *deps, size_t *n) {
	return cuGraphNodeGetDependencies(node, deps, n);
}

CUresult cgt_node_type(CUgraphNode node, int *t) {
	CUgraphNodeType nt;
	CUresult r = cuGraphNodeGetType(node, &nt);
	*t = (int)nt;
	return r;
}


typedef CUresult (*cgt_kernel_get_params_fn)(CUgraphNode, void *);
typedef CUresult (*cgt_func_get_name_fn)(const char **, CUfunction);

static cgt_kernel_get_params_fn cgt_kernel_get_params = NULL;
static cgt_func_get_name_fn cgt_func_get_name = NULL;

// cgt_resolve looks the newer entry points up once (the Go side guards it
// with a sync.Once). Without the CUDA 12 form it falls back to the 11.8
// symbol, whose struct is a prefix of cgt_kernel_params.
void cgt_resolve(void) {
	void *fn = NULL;
	if (cuGetProcAddress("cuGraphKernelNodeGetParams", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT) == CUDA_SUCCESS && fn != NULL) {
		cgt_kernel_get_params = (cgt_kernel_get_params_fn)fn;
	} else {
		cgt_kernel_get_params = (cgt_kernel_get_params_fn)cuGraphKernelNodeGetParams;
	}
	fn = NULL;
	if (cuGetProcAddress("cuFuncGetName", &fn, 12030, CU_GET_PROC_ADDRESS_DEFAULT) == CUDA_SUCCESS && fn != NULL) {
		cgt_func_get_name = (cgt_func_get_name_fn)fn;
	}
}

CUresult cgt_kernel_node(CUgraphNode node, cgt_kernel_params *p) {
	memset(p, 0, sizeof *p);
	return cgt_kernel_get_params(node, p);
}

// cgt_func_name returns NULL where the driver lacks cuFuncGetName.
const char *cgt_func_name(CUfunction fn) {
	const char *name = NULL;
	if (cgt_func_get_name == NULL || cgt_func_get_name(&name, fn) != CUDA_SUCCESS) return NULL;
	return name;
}

CUresult cgt_memcpy_node(CUgraphNode node, CUDA_MEMCPY3D *p) {
	memset(p, 0, sizeof *p);
	return cuGraphMemcpyNodeGetParams(node, p);
}

CUresult cgt_memset_node(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *p) {
	memset(p, 0, sizeof *p);
	return cuGraphMemsetNodeGetParams(node, p);
}

const char *cgt_error_name(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS) return NULL;
	return s;
}

// cgt_raw_graph_launch and cgt_raw_stream_sync are the bare driver calls,
// without the context check: the floor the benchmarks measure the device
// against. The caller makes the context current on its thread first.
CUresult cgt_raw_graph_launch(uint64_t e, CUstream st) {
	return cuGraphLaunch((CUgraphExec)(uintptr_t)e, st);
}

CUresult cgt_raw_stream_sync(CUstream st) { return cuStreamSynchronize(st); }

// Streams and events of the device, made here rather than through
// gorgonia.org/cu so that the fences below get the raw handles.
CUresult cgt_stream_create(CUcontext ctx, unsigned int flags, CUstream *st) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuStreamCreate(st, flags);
}

CUresult cgt_stream_destroy(CUcontext ctx, CUstream st) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuStreamDestroy(st);
}

CUresult cgt_event_create(CUcontext ctx, CUevent *ev) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuEventCreate(ev, CU_EVENT_DISABLE_TIMING);
}

CUresult cgt_event_destroy(CUcontext ctx, CUevent ev) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuEventDestroy(ev);
}

// cgt_wait makes st wait for the work queued on other so far: an event
// recorded on other, waited on by st (a wait takes the event's state when
// it is enqueued, so one event per stream is enough).
static CUresult cgt_wait(CUstream st, CUstream other, CUevent ev) {
	CUresult r = cuEventRecord(ev, other);
	if (r != CUDA_SUCCESS) return r;
	return cuStreamWaitEvent(st, ev, 0);
}

CUresult cgt_wait_stream(CUcontext ctx, CUstream st, CUstream other, CUevent ev) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cgt_wait(st, other, ev);
}

CUresult cgt_mem_free(CUcontext ctx, CUdeviceptr p) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	r = cuThreadExchangeStreamCaptureMode(&mode);
	if (r != CUDA_SUCCESS) return r;
	r = cuMemFree(p);
	cuThreadExchangeStreamCaptureMode(&mode);
	return r;
}

CUresult cgt_staging_free(CUcontext ctx, cgt_staging *sg) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	if (sg->done != NULL) {
		r = cuEventSynchronize(sg->done);
		CUresult r2 = cuEventDestroy(sg->done);
		if (r == CUDA_SUCCESS) r = r2;
		sg->done = NULL;
	}
	if (sg->buf != NULL) {
		CUresult r2 = cuMemFreeHost(sg->buf);
		if (r == CUDA_SUCCESS) r = r2;
		sg->buf = NULL;
		sg->size = 0;
	}
	return r;
}

// cgt_upload copies bytes of host memory at src to dst, ordered after all
// the work queued on s0 and s1 and before any work queued on either later.
//
// cuMemcpyHtoD from pageable memory runs on the legacy stream and may
// return before its DMA lands; the device's streams are non-blocking, so
// a kernel queued next on them could run before it (issue 16: TestFill
// read the old values). Here the bytes go through a pinned staging buffer
// that the device owns, so the asynchronous copy has defined semantics and
// the caller's memory is free once this returns, and the copy is queued on
// s0 between two event fences. Nothing waits on the host except for the
// previous upload's DMA when the staging buffer is needed again.
//
// fence = 0 when a stream is capturing (an event on it would be captured):
// the copy then runs on s0, which is not capturing, and the host waits for
// it, which orders it before everything queued after.
CUresult cgt_upload(CUcontext ctx, cgt_staging *sg, CUdeviceptr dst, const void *src, size_t bytes,
		CUstream s0, CUstream s1, CUevent e1, int fence) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	if (sg->done == NULL) {
		r = cuEventCreate(&sg->done, CU_EVENT_DISABLE_TIMING);
		if (r != CUDA_SUCCESS) return r;
	} else {
		// The last upload's DMA may still read the staging buffer.
		r = cuEventSynchronize(sg->done);
		if (r != CUDA_SUCCESS) return r;
	}
	if (sg->size < bytes) {
		if (sg->buf != NULL) {
			r = cuMemFreeHost(sg->buf);
			sg->buf = NULL;
			sg->size = 0;
			if (r != CUDA_SUCCESS) return r;
		}
		CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
		r = cuThreadExchangeStreamCaptureMode(&mode);
		if (r != CUDA_SUCCESS) return r;
		r = cuMemHostAlloc(&sg->buf, bytes, 0);
		cuThreadExchangeStreamCaptureMode(&mode);
		if (r != CUDA_SUCCESS) {
			sg->buf = NULL;
			return r;
		}
		sg->size = bytes;
	}
	memcpy(sg->buf, src, bytes);
	if (fence) {
		r = cgt_wait(s0, s1, e1);
		if (r != CUDA_SUCCESS) return r;
	}
	r = cuMemcpyHtoDAsync(dst, sg->buf, bytes, s0);
	if (r != CUDA_SUCCESS) return r;
	r = cuEventRecord(sg->done, s0);
	if (r != CUDA_SUCCESS) return r;
	if (!fence) return cuEventSynchronize(sg->done);
	return cuStreamWaitEvent(s1, sg->done, 0);
}

// cgt_download copies bytes at src to host memory at dst once the work
// queued on s0 and s1 is done: s0 waits for s1 (unless fence = 0, when a
// stream is capturing), the copy is queued on s0, and the host waits for
// s0, so the copy has landed when this returns.
CUresult cgt_download(CUcontext ctx, void *dst, CUdeviceptr src, size_t bytes,
		CUstream s0, CUstream s1, CUevent e1, int fence) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	if (fence) {
		r = cgt_wait(s0, s1, e1);
		if (r != CUDA_SUCCESS) return r;
	}
	r = cuMemcpyDtoHAsync(dst, src, bytes, s0);
	if (r != CUDA_SUCCESS) return r;
	return cuStreamSynchronize(s0);
}

// cgt_copy_spans copies n device ranges (dst[i] <- src[i], bytes[i]) on
// s0, after the work queued on s0 and s1 and before the work queued on
// either later: the snapshots of the pool's segments and their restores.
CUresult cgt_copy_spans(CUcontext ctx, size_t n, const CUdeviceptr *dst, const CUdeviceptr *src,
		const size_t *bytes, CUstream s0, CUstream s1, CUevent e0, CUevent e1) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	r = cgt_wait(s0, s1, e1);
	if (r != CUDA_SUCCESS) return r;
	for (size_t i = 0; i < n; i++) {
		r = cuMemcpyDtoDAsync(dst[i], src[i], bytes[i], s0);
		if (r != CUDA_SUCCESS) return r;
	}
	return cgt_wait(s1, s0, e0);
}

// cgt_graph_copies lists the memcpy nodes of g (dst, src, bytes), the
// two-call way: with dst NULL it only counts them into *n.
CUresult cgt_graph_copies(CUcontext ctx, uint64_t g, CUdeviceptr *dst, CUdeviceptr *src, size_t *bytes, size_t *n) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	size_t count = 0;
	r = cuGraphGetNodes((CUgraph)(uintptr_t)g, NULL, &count);
	if (r != CUDA_SUCCESS) return r;
	if (count == 0) {
		*n = 0;
		return CUDA_SUCCESS;
	}
	CUgraphNode *nodes = (CUgraphNode *)malloc(count * sizeof(CUgraphNode));
	if (nodes == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
	r = cuGraphGetNodes((CUgraph)(uintptr_t)g, nodes, &count);
	size_t found = 0;
	for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++) {
		CUgraphNodeType t;
		r = cuGraphNodeGetType(nodes[i], &t);
		if (r != CUDA_SUCCESS || t != CU_GRAPH_NODE_TYPE_MEMCPY) continue;
		CUDA_MEMCPY3D p;
		memset(&p, 0, sizeof p);
		r = cuGraphMemcpyNodeGetParams(nodes[i], &p);
		if (r != CUDA_SUCCESS) break;
		if (dst != NULL) {
			if (found >= *n) break;
			dst[found] = p.dstDevice;
			src[found] = p.srcDevice;
			bytes[found] = p.WidthInBytes * (p.Height ? p.Height : 1) * (p.Depth ? p.Depth : 1);
		}
		found++;
	}
	free(nodes);
	*n = found;
	return r;
}

// The variants of the graph launch that BenchmarkGPULaunchPaths compares
// with the device's: cuGraphUpload (which moves the executable graph's
// work to the device ahead of its first launch) and the default streams.
CUresult cgt_graph_upload(CUcontext ctx, uint64_t e, CUstream st) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	return cuGraphUpload((CUgraphExec)(uintptr_t)e, st);
}

CUstream cgt_legacy_stream(void) { return CU_STREAM_LEGACY; }
CUstream cgt_per_thread_stream(void) { return CU_STREAM_PER_THREAD; }

// cgt_init runs a tensor init kernel (kind: CGT_INIT_*) on s0, ordered as
// cgt_upload orders the copy it replaces: after the work queued on s0 and
// s1 so far and before any work queued on either later (s1 waits on e0,
// recorded on s0 after the kernel). fence = 0 when a stream is capturing:
// the kernel runs on s0, which is not, and the host waits for it.
CUresult cgt_init(CUcontext ctx, CUfunction fn, int kind, unsigned int gx, unsigned int bx,
		CUdeviceptr out, float s, long long n, long long seed, long long first,
		CUstream s0, CUstream s1, CUevent e0, CUevent e1, int fence) {
	CUresult r = cgt_bind(ctx);
	if (r != CUDA_SUCCESS) return r;
	void *args[4];
	switch (kind) {
	case CGT_INIT_FILL:
		args[0] = &out; args[1] = &s; args[2] = &n;
		break;
	case CGT_INIT_RAND:
		args[0] = &out; args[1] = &n; args[2] = &seed; args[3] = &first;
		break;
	case CGT_INIT_ARANGE:
		args[0] = &out; args[1] = &n; args[2] = &first;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (fence) {
		r = cgt_wait(s0, s1, e1);
		if (r != CUDA_SUCCESS) return r;
	}
	r = cuLaunchKernel(fn, gx, 1, 1, bx, 1, 1, 0, s0, args, NULL);
	if (r != CUDA_SUCCESS) return r;
	if (!fence) return cuStreamSynchronize(s0);
	return cgt_wait(s1, s0, e0);
}
