"""A torchvision detector (Faster R-CNN with a MobileNetV3 FPN backbone,
random weights, nothing downloaded) compiled under reduce-overhead for
inference: its transform, backbone, region proposals and box heads make
many graphs between graph breaks (data-dependent shapes: the proposals
kept, the boxes above the score threshold), some of whose inputs are
CPU tensors or change size (graphs Dynamo compiles again, dynamic, or
whose CUDA graphs are skipped), around eager code. Two image sizes, 3
batches each, under inference_mode with cudagraph_mark_step_begin()
before each batch. Exits 0 with a message when torchvision is not
installed."""
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
    for size in (256, 320):
        for b in range(3):
            torch.compiler.cudagraph_mark_step_begin()
            images = [torch.rand(3, size, size, device="cuda") for _ in range(2)]
            out = compiled(images)
            print("size %d batch %d: %s boxes" % (size, b, [len(o["boxes"]) for o in out]))
