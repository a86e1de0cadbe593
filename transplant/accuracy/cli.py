"""The arguments of ``transplant -i PROJECT -o OUT accuracy ...`` and the options they make.

Kept apart from ``transplant/cli.py`` so that the main parser only hooks the mode in.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import templates


def steps(text: str) -> tuple[int, ...] | None:
    """``0,1`` -> (0, 1); ``all`` -> None (every step)."""
    if text.strip().lower() == "all":
        return None
    try:
        values = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        values = ()
    if not values or values[0] < 0:
        raise argparse.ArgumentTypeError(f"invalid steps {text!r}: give step numbers like 0,1 or 'all'")
    return values


def add_accuracy_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", "--main", type=Path, required=True, help="entry Python file of the training script")
    p.add_argument(
        "-t",
        "--target-model",
        "--target_model",
        dest="target",
        default="model",
        help="variable that holds the model (default: model)",
    )
    p.add_argument(
        "--steps",
        type=steps,
        default=templates.DEFAULT_STEPS,
        help="training steps to dump: step numbers from 0, comma-separated, or 'all' (default: 0,1)",
    )
    p.add_argument(
        "--task",
        choices=templates.TASKS,
        default="dump",
        help="dump: the data transplant compare compares (the default); overflow: a statistics dump of the API calls "
        "for the overflow step (transplant compare --task overflow)",
    )
    p.add_argument(
        "--level",
        choices=tuple(templates.LEVELS),
        default=None,
        help="what is dumped: module inputs and outputs, API calls, or both (default: both; api with --task overflow)",
    )
    p.add_argument(
        "--data",
        choices=tuple(templates.DATA),
        default="statistics",
        help="statistics of each tensor (max, min, mean, norm) or the tensors themselves (default: statistics)",
    )
    p.add_argument(
        "--compatible-impl",
        action="store_true",
        help=f"the NPU computes the APIs as upstream PyTorch does ({templates.COMPATIBLE_ENV}=1): tells an "
        "implementation difference from a bug",
    )


def options_from(args: argparse.Namespace):
    from .trees import AccuracyOptions

    level = args.level or ("api" if args.task == "overflow" else "both")
    return AccuracyOptions(
        main=args.main,
        target=args.target,
        steps=args.steps,
        level=level,
        data=args.data,
        task=args.task,
        compatible=args.compatible_impl,
    )
