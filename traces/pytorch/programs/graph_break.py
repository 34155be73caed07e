"""A model with a data-dependent branch in forward (`if h.sum() > 0:`): Dynamo
breaks the graph there, so each call of the compiled module runs two tree
functions, the graph before the break and the resume function after it,
inside one torch.compile invocation. Without --mark-step PyTorch counts them
as one generation (the resume function becomes the first graph's child);
with --mark-step each iteration begins with cudagraph_mark_step_begin().
Each iteration reads one element of the output on the host (a `read`)."""
import sys

import torch
import torch.nn as nn

MARK = "--mark-step" in sys.argv[1:]
ITERS, D = 6, 32


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, D)
        self.fc2 = nn.Linear(D, D)
        self.fc3 = nn.Linear(D, D)

    def forward(self, x):
        h = self.fc1(x).relu()
        if h.sum() > 0:  # data-dependent: the graph breaks here
            h = self.fc2(h)
        else:
            h = self.fc3(h)
        return h * 2


torch.manual_seed(0)
model = Gate().cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
x = torch.rand(8, D, device="cuda")
with torch.no_grad():
    for it in range(ITERS):
        if MARK:
            torch.compiler.cudagraph_mark_step_begin()
        y = compiled(x)
        print("iter %d y[0, 0] %.4f" % (it, y[0, 0].item()))
