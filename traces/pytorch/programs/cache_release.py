"""Training with evaluation between epochs, calling torch.cuda.empty_cache()
where users are told to "free memory": after each epoch's training steps,
before its evaluation at a larger batch, and after the evaluation. The
model (dropout in it, so train() and eval() are two compiled graphs) is
compiled under reduce-overhead: forward and backward become tree
functions, and the evaluation, under no_grad, an inference graph beside
them. The cached segments empty_cache gives back are the caching
allocator's state the trace replays (its `empty_cache` records); the
tree's own pool is not among them while it lives. The evaluation's
input (2 MiB) takes a 20 MiB segment of its own, which the second
empty_cache of each epoch gives back.

    python3 -m cgtrace run -o cache_release.cgt.jsonl cache_release.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

EPOCHS, STEPS, BATCH, EVAL_BATCH, D, HIDDEN, CLASSES = 3, 4, 32, 8192, 64, 256, 10

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(D, HIDDEN), nn.ReLU(), nn.Dropout(0.1), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                      nn.Linear(HIDDEN, CLASSES)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
compiled = torch.compile(model, mode="reduce-overhead")
labels = torch.randint(0, CLASSES, (BATCH,), device="cuda")

for epoch in range(EPOCHS):
    model.train()
    for _ in range(STEPS):
        torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(BATCH, D, device="cuda")
        loss = F.cross_entropy(compiled(x), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    print("epoch %d loss %.4f" % (epoch, loss.item()))
    del x, loss
    torch.cuda.empty_cache()  # the habit: give memory back before evaluating
    model.eval()
    with torch.no_grad():
        torch.compiler.cudagraph_mark_step_begin()
        big = torch.randn(EVAL_BATCH, D, device="cuda")
        acc = compiled(big).argmax(dim=-1).float().mean().item()
    del big
    torch.cuda.memory.empty_cache()  # the same function, by its other name
    print("epoch %d eval %.3f allocated %d" % (epoch, acc, torch.cuda.memory_allocated()))
