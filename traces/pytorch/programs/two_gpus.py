"""A two-stage pipeline split across two GPUs, each stage compiled with
reduce-overhead: stage one (a Linear and a ReLU) on cuda:0, its output
copied to cuda:1, stage two (a Linear) there, with
cudagraph_mark_step_begin() before each step. Each device gets its own
tree manager and private pool; the copy between them is an eager tensor on
cuda:1 that stage two takes as a plain input. The last step's outputs are
kept (read on the host after the loop). Needs two CUDA devices: with fewer
it exits with status 3 before recording anything."""
import sys

import torch

if torch.cuda.device_count() < 2:
    print("two_gpus.py needs two CUDA devices, this machine has %d" % torch.cuda.device_count(),
          file=sys.stderr)
    sys.exit(3)

ITERS, N, D = 6, 16, 64
torch.manual_seed(0)
stage1 = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.ReLU()).to("cuda:0").eval()
stage2 = torch.nn.Linear(D, D).to("cuda:1").eval()
run1 = torch.compile(stage1, mode="reduce-overhead")
run2 = torch.compile(stage2, mode="reduce-overhead")

with torch.no_grad():
    for it in range(ITERS):
        torch.compiler.cudagraph_mark_step_begin()
        x = torch.rand(N, D, device="cuda:0")
        h = run1(x)
        y = run2(h.to("cuda:1"))
        print("iter %d h on %s, y on %s, y.sum %.4f" % (it, h.device, y.device, y.sum().item()))
    print("kept: h %s y %s" % (tuple(h.shape), tuple(y.shape)))
