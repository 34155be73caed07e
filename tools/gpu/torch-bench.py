#!/usr/bin/env python3
"""torch-bench: the workloads of engine/bench_cuda_test.go under PyTorch's
own CUDAGraph Trees (torch.compile mode="reduce-overhead"), timed in the same
run as cgtviz's benchmarks so that the two can be compared as a ratio.

Prints one line per workload, "name: median us/call (min)", as
BENCHMARKS.md quotes it. Needs a GPU and PyTorch.
"""
import statistics
import time

import torch

RO = dict(mode="reduce-overhead")


def timeit(fn, iters=2000, reps=5):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        per.append((t1 - t0) / iters * 1e6)
    return statistics.median(per), min(per)


def main():
    torch._dynamo.reset()

    @torch.compile(**RO)
    def f(x):
        return x + 1

    x = torch.tensor([1.0, 2, 3, 4], device="cuda")

    def replay():
        torch.compiler.cudagraph_mark_step_begin()
        return f(x)

    med, lo = timeit(replay)
    print("torch replay 1-in/1-out (mark_step + compiled call): %.1f us/call (min %.1f)" % (med, lo))

    @torch.compile(**RO)
    def foo(x):
        return x + 1, x + 2

    @torch.compile(**RO)
    def fee(y):
        return y * 4

    inp = torch.tensor([1.0, 2, 3, 4], device="cuda")

    def step():
        torch.compiler.cudagraph_mark_step_begin()
        a, b = foo(inp)
        del a
        return fee(b)

    med, lo = timeit(step)
    print("torch foo->fee step: %.1f us/step (min %.1f)" % (med, lo))

    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = x + 1
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        y = x + 1
    med, lo = timeit(g.replay)
    print("torch raw CUDAGraph.replay 1 kernel: %.1f us/call (min %.1f)" % (med, lo))


if __name__ == "__main__":
    main()
