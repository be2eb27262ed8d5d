"""fastblock's full speed reports, beside the asv suite (not installed).

    python -m speed_reports --targets      # every speed target, several minutes
    python -m speed_reports --transpose    # fb.transpose against NumPy (and PyTorch)
    python -m speed_reports --peers        # ONNX Runtime, OpenVINO, PyTorch, TensorFlow
    python -m speed_reports --patterns     # fb.rearrange / fb.repeat against einops
    python -m speed_reports --pipeline     # worker processes, and beside a busy core; a plot
    python -m speed_reports --sizes        # every front door against NumPy, 64 B to 64 MiB, plot
    python -m speed_reports --preprocess   # move + dtype + scale/offset in one pass, against
                                              # NumPy, OpenCV, PyTorch; a plot (--plot, --quick)
    python -m speed_reports --loader       # torch's DataLoader, 0 and 2 workers, images/s
    python -m speed_reports --dask         # fastblock.dask on a LocalCluster against Dask's
                                              # own way, map_blocks and the floor (~2 min)
    python -m speed_reports --ray          # Ray Data map_batches: fastblock.pipelines against
                                              # NumPy's own way and the floor, images/s
    python -m speed_reports --hf           # Hugging Face datasets with_transform: against
                                              # torchvision's ops and the floor, images/s
    python -m speed_reports --all          # every report in turn

Each report measures the fastblock that ``import fastblock`` finds: to A/B
two builds, run it once with each build first on ``PYTHONPATH``. The short
self-check and speed report is ``python -m fastblock``.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

REPORTS = ("targets", "transpose", "peers", "patterns", "pipeline", "sizes", "preprocess",
           "loader", "dask", "ray", "hf")
# The reports that take the parsed options (their own, and --plot/--quick).
WITH_OPTIONS = ("pipeline", "preprocess", "dask")
# A report's module in this package where it is not named after the report.
MODULES = {"dask": "dask_cases", "ray": "pipelines", "hf": "pipelines"}
# A report's function where it is not ``report`` (modules of several reports).
FUNCTIONS = {"ray": "report_ray", "hf": "report_hf"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m speed_reports", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in REPORTS:
        parser.add_argument(f"--{name}", action="store_true", help=f"the {name} report")
    parser.add_argument("--all", action="store_true", help="every report, in the order above")
    importlib.import_module("speed_reports.pipeline").add_arguments(parser)
    importlib.import_module("speed_reports.preprocess").add_arguments(parser)
    importlib.import_module("speed_reports.dask_cases").add_arguments(parser)
    args = parser.parse_args(argv)
    chosen = [name for name in REPORTS if args.all or getattr(args, name)]
    if not chosen:
        parser.error("name a report: " + ", ".join(f"--{name}" for name in REPORTS) + " or --all")

    import fastblock as fb  # here, so that --help works without a build
    import numpy as np
    print(f"fastblock {fb.__version__} from {os.path.dirname(fb.__file__)}: numpy {np.__version__}, "
          f"{fb.get_num_threads()} threads")
    for name in chosen:
        print()
        module = importlib.import_module(f"speed_reports.{MODULES.get(name, name)}")
        report = getattr(module, FUNCTIONS.get(name, "report"))
        if name in WITH_OPTIONS:
            report(args)
        else:
            report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
