"""Importing fastblock from a source tree whose extensions are not built (the
tree shadowing an installed package) says so, and how to build them."""
import shutil
import subprocess
import sys
from pathlib import Path

import fastblock


def test_unbuilt_source_tree_explains_how_to_build(tmp_path):
    package = tmp_path / "fastblock"
    package.mkdir()
    for source in Path(fastblock.__file__).parent.glob("*.py"):
        shutil.copy(source, package / source.name)
    # -S: no site-packages, whose editable-install finders could lend the
    # copy another tree's extensions; the import must not need them first.
    command = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import fastblock"
    run = subprocess.run([sys.executable, "-S", "-c", command], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    message = run.stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: fastblock's compiled engine")
    assert str(package) in message
    assert "source tree shadowing the installed package" in message
    assert "python -m pip install -e ." in message
    assert "python setup.py build_ext --inplace" in message
    assert "run from another directory" in message
