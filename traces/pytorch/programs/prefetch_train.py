"""A training loop whose batches a prefetcher copies to the GPU on a side
stream, the pattern of NVIDIA's and timm's loaders: the next batch's
host-to-device copy is issued on its own torch.cuda.Stream while the
current step runs, the step's stream waits for it (wait_stream) and the
batch is marked as used there (record_stream), so the caching allocator
keeps each batch's block for the side stream's pool. The model, an MLP
with its loss, is compiled under reduce-overhead; SGD with momentum
outside it; mark_step each step; every batch a new input. Then
inference on the side stream itself: five calls made inside
`with torch.cuda.stream(side):`, the tree's replays launched there.

    python3 -m cgtrace run -o prefetch_train.cgt.jsonl prefetch_train.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS, BATCH, D, HIDDEN, CLASSES = 10, 128, 64, 256, 10

torch.manual_seed(0)
host_x = torch.randn(STEPS + 1, BATCH, D).pin_memory()
host_y = torch.randint(0, CLASSES, (STEPS + 1, BATCH)).pin_memory()
model = nn.Sequential(nn.Linear(D, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)


def step_loss(x, y):
    return F.cross_entropy(model(x), y)


compiled = torch.compile(step_loss, mode="reduce-overhead")
side = torch.cuda.Stream()


def prefetch(i):
    with torch.cuda.stream(side):
        return host_x[i].cuda(non_blocking=True), host_y[i].cuda(non_blocking=True)


nxt = prefetch(0)
for i in range(STEPS):
    torch.cuda.current_stream().wait_stream(side)
    x, y = nxt
    x.record_stream(torch.cuda.current_stream())
    y.record_stream(torch.cuda.current_stream())
    nxt = prefetch(i + 1)
    torch.compiler.cudagraph_mark_step_begin()
    loss = compiled(x, y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if i % 5 == 4:
        print("step %d loss %.4f" % (i, loss.item()))
del x, y, nxt, loss

model.eval()
infer = torch.compile(model, mode="reduce-overhead")
with torch.no_grad(), torch.cuda.stream(side):
    for i in range(5):
        torch.compiler.cudagraph_mark_step_begin()
        out = infer(torch.randn(BATCH, D, device="cuda"))
        print("side-stream call %d: %.3f" % (i, out.float().norm().item()))
torch.cuda.synchronize()
print("allocated %d reserved %d" % (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()))
