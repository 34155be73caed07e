"""Training with an optimizer whose step is compiled too: the model's
forward and backward are tree functions, and so is AdamW's step
(capturable, its state on the GPU), which updates the parameters in place
(static inputs mutated by a graph). Every iteration begins with
cudagraph_mark_step_begin(); the loss is read on the host each iteration."""
import torch
import torch.nn as nn
import torch.nn.functional as F

ITERS, BATCH, D, HIDDEN, CLASSES = 6, 32, 64, 128, 10

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(D, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(1e-3, device="cuda"), capturable=True)
compiled = torch.compile(model, mode="reduce-overhead")


@torch.compile(mode="reduce-overhead")
def opt_step():
    opt.step()


data = torch.randn(BATCH, D, device="cuda")
labels = torch.randint(0, CLASSES, (BATCH,), device="cuda")
for it in range(ITERS):
    torch.compiler.cudagraph_mark_step_begin()
    loss = F.cross_entropy(compiled(data), labels)
    loss.backward()
    opt_step()
    opt.zero_grad(set_to_none=True)
    print("iter %d loss %.4f" % (it, loss.item()))
