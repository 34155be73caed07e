"""Inference under reduce-overhead without torch.no_grad() or mark_step, a
users' mistake: an MLP with parameters that require grad, on a new batch
each of 12 steps: each output's backward never runs, so no call is ever
graphed (PyTorch: "Unable to hit fast path of CUDAGraphs because of
pending, uninvoked backwards"). Then 12 steps under no_grad: still none,
the calls stay on the first warmup's path ("because ancestor needed to
warm up") with no cudagraph_mark_step_begin() to leave it."""
import torch
import torch.nn as nn

STEPS, BATCH, D = 12, 16, 64

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(D, 128), nn.GELU(), nn.Linear(128, 10)).cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
for phase in ("with grad", "no_grad"):
    preds = []
    for s in range(STEPS):
        x = torch.randn(BATCH, D, device="cuda")
        if phase == "no_grad":
            with torch.no_grad():
                out = compiled(x)
        else:
            out = compiled(x)
        preds.append(int(out[0].argmax()))
    print("%s: %s" % (phase, preds))
