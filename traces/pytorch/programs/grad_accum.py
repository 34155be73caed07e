"""Gradient accumulation under reduce-overhead, the way users write it and
the ways it goes wrong (pytorch#169545, #146569). First #169545's own
program: a Linear compiled whole, an input that requires grad, outputs
cloned, mark_step each iteration and no optimizer, so each backward adds
to the .grad the one before handed out, which the new generation
deallocated: PyTorch raises its overwritten error inside the autograd
engine (printed; the program goes on). Then a two-layer MLP compiled
whole, its loss outside, fp16 autocast with a GradScaler, four
micro-batches an optimizer step:

1. `mark each micro-batch`: cudagraph_mark_step_begin() before every
   micro-batch, the MLP's first calls.
2. `right`: mark_step once an optimizer step, before its micro-batches:
   each micro-batch's forward and backward extend the tree's path, and
   the gradients the first backward hands out (.grad) stay live while
   the others add to them.
3. `kept grads`: as 2, but zero_grad(set_to_none=False): the gradients
   the first step's backward handed out stay .grad into the next step.

What PyTorch 2.11 does with 1 and 3 is what the trace records.

    python3 -m cgtrace run -o grad_accum.cgt.jsonl grad_accum.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

MICRO, BATCH, WIDTH = 4, 16, 64

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, 1)).cuda()
compiled = torch.compile(model, mode="reduce-overhead")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cuda")
data = torch.randn(64, BATCH, WIDTH, device="cuda")
target = data.sum(dim=2, keepdim=True) * 0.1


def micro_batch(k):
    with torch.autocast("cuda", dtype=torch.float16):
        out = compiled(data[k % len(data)])
    loss = F.mse_loss(out.float(), target[k % len(data)]) / MICRO
    scaler.scale(loss).backward()
    return loss.item()


def step(k, mark_each, set_to_none=True):
    if not mark_each:
        torch.compiler.cudagraph_mark_step_begin()
    total = 0.0
    for m in range(MICRO):
        if mark_each:
            torch.compiler.cudagraph_mark_step_begin()
        total += micro_batch(k * MICRO + m)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=set_to_none)
    return total


def phase(name, steps, **kw):
    for k in range(steps):
        try:
            print("%s: step %d loss %.4f" % (name, k, step(k, **kw)))
        except RuntimeError as e:
            print("%s: step %d: %s" % (name, k, str(e).splitlines()[0][:100]))
            opt.zero_grad(set_to_none=True)


def issue_169545():
    lin = torch.compile(nn.Linear(10, 1).cuda(), fullgraph=True, mode="reduce-overhead")
    for k in range(5):
        torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(10, device="cuda", requires_grad=True)
        loss = lin(x).clone().sum().clone()
        try:
            loss.backward()
            print("#169545: iteration %d ok" % k)
        except RuntimeError as e:
            print("#169545: iteration %d: %s" % (k, str(e).splitlines()[0][:100]))


issue_169545()
phase("mark each micro-batch", 2, mark_each=True)
phase("right", 4, mark_each=False)
phase("kept grads", 3, mark_each=False, set_to_none=False)
