"""Training a small MLP: the model is compiled (its forward and backward
become tree functions), the loss and the Adam step run eagerly outside the
compiled region, and each iteration begins with cudagraph_mark_step_begin()
so PyTorch may free the previous iteration's outputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F

ITERS, BATCH, D, HIDDEN, CLASSES = 8, 32, 64, 128, 10


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


torch.manual_seed(0)
model = MLP().cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
compiled = torch.compile(model, mode="reduce-overhead")
# a fixed synthetic task, so the loss visibly falls
data = torch.randn(BATCH, D, device="cuda")
labels = torch.randint(0, CLASSES, (BATCH,), device="cuda")

for it in range(ITERS):
    torch.compiler.cudagraph_mark_step_begin()
    x = data + 0.01 * torch.randn_like(data)
    logits = compiled(x)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    print("iter %d loss %.4f" % (it, loss.item()))
