"""A torchvision detector (Faster R-CNN with a MobileNetV3 FPN backbone,
random weights, nothing downloaded) compiled under reduce-overhead for
inference: its transform, backbone, region proposals and box heads make
many graphs between graph breaks (data-dependent shapes: the proposals
kept, the boxes above the score threshold), some of whose inputs are
CPU tensors or change size (graphs Dynamo compiles again, dynamic, or
whose CUDA graphs are skipped), around eager code. Three batches of two
256x256 images under inference_mode, cudagraph_mark_step_begin() before
each (a second image size compiles most graphs again: minutes more).
Exits 0 with a message when torchvision is not installed."""
import sys

import torch

try:
    import torchvision
except ImportError:
    print("detection_infer: torchvision is not installed; nothing to record")
    sys.exit(0)

torch.manual_seed(0)
model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
    weights=None, weights_backbone=None, num_classes=5).cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
with torch.inference_mode():
    for b in range(3):
        torch.compiler.cudagraph_mark_step_begin()
        images = [torch.rand(3, 256, 256, device="cuda") for _ in range(2)]
        out = compiled(images)
        print("batch %d: %s boxes" % (b, [len(o["boxes"]) for o in out]))
