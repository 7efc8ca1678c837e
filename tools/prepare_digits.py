"""Prepare ``data/digits.csv.gz``: the UCI 8x8 handwritten digits, as shipped inside scikit-learn.

    python tools/prepare_digits.py            # fetch scikit-learn's wheel with pip, extract, verify, copy
    python tools/prepare_digits.py --wheel W  # use a wheel already on disk instead

Source: the test set of "Optical Recognition of Handwritten Digits" (E. Alpaydin, C. Kaynak,
UCI Machine Learning Repository, 1998, https://doi.org/10.24432/C50P49), license CC BY 4.0:
1,797 images of 8x8 pixels, each pixel the count (0..16) of set pixels in a 4x4 block of the
original 32x32 bitmap, and the digit 0..9. scikit-learn ships that file as
``sklearn/datasets/data/digits.csv.gz`` (one row per image: 64 pixel counts, then the label);
this script takes it from the scikit-learn 1.5.2 wheel (``pip download --no-deps``; only pip and
the package registry are used, scikit-learn is not installed) and copies its bytes unchanged, so
the checksum below is that of the file inside the wheel. It then parses the copy and checks the
counts above. The loader is :func:`posenc_course.data.load_digits`, which verifies the same SHA-256.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

SKLEARN_VERSION = "1.5.2"
MEMBER = "sklearn/datasets/data/digits.csv.gz"
SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"
TARGET = Path(__file__).resolve().parent.parent / "data" / "digits.csv.gz"


def download_wheel(folder: Path) -> Path:
    """``pip download`` the scikit-learn wheel for this Python into ``folder``; return its path."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         f"scikit-learn=={SKLEARN_VERSION}", "-d", str(folder)],
        check=True,
    )
    return next(folder.glob("scikit_learn-*.whl"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a scikit-learn wheel already downloaded")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel or download_wheel(Path(tmp))
        data = zipfile.ZipFile(wheel).read(MEMBER)
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        sys.exit(f"{MEMBER} in {wheel.name} has SHA-256 {digest}, expected {SHA256}")
    table = np.loadtxt(gzip.decompress(data).decode().splitlines(), delimiter=",")
    assert table.shape == (1797, 65), table.shape
    assert table[:, :64].min() == 0 and table[:, :64].max() == 16
    assert sorted(set(table[:, 64].astype(int).tolist())) == list(range(10))
    TARGET.write_bytes(data)
    print(f"wrote {TARGET} ({len(data)} bytes, SHA-256 {digest}): {len(table)} images")


if __name__ == "__main__":
    main()
