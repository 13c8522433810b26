"""The six GPU-sharing policies of Weng et al., "Beware of Fragmentation: Scheduling
GPU-Sharing Workloads with Fragmentation Gradient Descent" (USENIX ATC '23), as Score plugins:
RandomFit, DotProduct, GpuClustering, GpuPacking, BestFit and FGD. None is in the default
profile; a profile enables one at the score point (docs/policy-lab.md).

They follow the paper's simulator, hkust-adsl/kubernetes-scheduler-simulator (HEAD 8f3d641):
- `gpus.py`: GPUs as DRA devices (the model an attribute, a share a capacity request) and what
  a node has left of each, read from the ResourceSlices and the DRA claim tracker
  (the simulator's `utils.GetNodeResourceViaNodeInfo`, `utils.GetPodResource`);
- `frag.py`: the target workload ("typical pods", `GetTypicalPods` in pkg/simulator/simulator.go)
  and a node's fragmentation for it (`NodeGpuShareFragAmount`, pkg/utils/frag.go);
- `scores.py`: the score formulas, from pkg/simulator/plugin/random_score.go,
  dot_product_score.go, gpu_clustering_score.go, gpu_packing_score.go, best_fit_score.go and
  fgd_score.go, and the GPU a shared request takes (open_gpu_share.go, AllocateGpuId);
- `plugins.py`: the plugins and their args.
"""

from scheduler.plugins.gpushare.plugins import PLUGIN_ENTRIES

__all__ = ["PLUGIN_ENTRIES"]
