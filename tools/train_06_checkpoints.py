"""Train notebook 06's 21 base models (7 position schemes x 3 seeds) and write them to data/checkpoints/06/.

Run it through make, which sets the reference numerics (one thread, tools/numerics_env.py):

    make checkpoints-06                 # all 21, two at a time
    make checkpoints-06 CKPT_JOBS=4     # more at a time, on a machine with more cores

Each run is ``posenc_course.nb06_extrapolation.train_base_model`` (the library's training loop,
with ``CHECKPOINT_CONFIG``), so the result does not depend on how many run at a time. Each model
is stored with ``save_checkpoint``: its parameters as float16 (the notebook evaluates them in
float32) and the loss of every training step. ``manifest.json`` records the config, the PyTorch
version, whether the numerics were the reference's, and per file its SHA-256, final losses and
CPU time. ``tests/course/test_nb06_checkpoints.py`` retrains the start of one run and checks it
against the stored loss curve.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from joblib import Parallel, delayed

from posenc_course import numerics
from posenc_course.data import char_corpus, lm_eval_windows
from posenc_course.nb06_extrapolation import (
    CHECKPOINT_CONFIG,
    CHECKPOINT_DIR,
    SCHEME_NAMES,
    SEEDS,
    build_base_model,
    checkpoint_file,
    save_checkpoint,
    train_base_model,
)
from posenc_lib.analysis.lm_metrics import per_position_loss, perplexity_at


def _one(name: str, seed: int, out: Path, config: dict) -> tuple[str, dict]:
    torch.set_num_threads(1)
    corpus = char_corpus()
    start = time.process_time()
    model, losses = train_base_model(name, seed, corpus, config)
    cpu = time.process_time() - start
    path = checkpoint_file(name, seed, out)
    digest = save_checkpoint(model, losses, path)
    # perplexity at L on the notebook's 32 evaluation windows (the first L characters of each),
    # of the weights as stored (float16, evaluated in float32): what notebook 06 compares with the 4-gram
    L = config["seq_len"]
    stored = build_base_model(name, len(corpus.vocab), config)
    with torch.no_grad():
        for p, q in zip(stored.parameters(), model.parameters()):
            p.copy_(q.half().float())
    inputs, targets = lm_eval_windows(corpus.valid, 8 * L, 32)
    ppl = perplexity_at(per_position_loss(stored.eval(), inputs[:, :L], targets[:, :L]), [L])[0]
    entry = {"scheme": name, "seed": seed, "sha256": digest, "bytes": path.stat().st_size,
             "final_loss": losses[-1], "mean_loss_last_100_steps": sum(losses[-100:]) / len(losses[-100:]),
             "perplexity_at_L": ppl, "cpu_seconds": round(cpu, 1)}
    print(f"{path.name}: final loss {losses[-1]:.4f}, perplexity at L {ppl:.3f}, {cpu:.0f} s CPU", flush=True)
    return path.name, entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR, help="output directory")
    parser.add_argument("--only", nargs="*", default=None, metavar="SCHEME",
                        help="train only these schemes (for a sweep; the manifest then lists only them)")
    parser.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS), help="seeds (default 0 1 2)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="override CHECKPOINT_CONFIG for a sweep, e.g. --set n_layers=4 steps=3000"
                             " (with --out elsewhere: the notebook loads only the shipped config)")
    args = parser.parse_args(argv)
    names = SCHEME_NAMES if not args.only else args.only
    unknown = sorted(set(names) - set(SCHEME_NAMES))
    if unknown:
        parser.error(f"unknown schemes {unknown}; choose from {list(SCHEME_NAMES)}")
    config = dict(CHECKPOINT_CONFIG)
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in config:
            parser.error(f"--set {item}: no such key; the config has {sorted(config)}")
        config[key] = type(config[key])(value)
    print(numerics.describe(), flush=True)
    start = time.time()
    jobs = [(name, seed) for name in names for seed in args.seeds]
    results = Parallel(n_jobs=args.jobs)(delayed(_one)(name, seed, args.out, config) for name, seed in jobs)
    manifest = {
        "what": "notebook 06's base models: tools/train_06_checkpoints.py, posenc_course.nb06_extrapolation",
        "config": config,
        "storage": "safetensors; parameters as float16 ('param.<name>'), the loss of every step as float32 ('losses')",
        "torch": torch.__version__,
        "reference_numerics": numerics.reproduces_reference(),
        "files": dict(sorted(results)),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    cpu = sum(entry["cpu_seconds"] for _, entry in results)
    print(f"{len(results)} checkpoints in {args.out}: {time.time() - start:.0f} s wall, {cpu:.0f} s CPU in the runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
