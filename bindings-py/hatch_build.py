"""Build hook: puts the evaluator component into the package before hatchling packs it.

Where the bytes come from, first match wins:

1. ``$SCALE_UNITS_WASM``: a component file built elsewhere (for example by CI, once).
2. The Scale Units workspace around this folder: ``cargo xtask component`` is run every time, so
   the wheel never carries a component older than the sources (cargo makes it a no-op when
   nothing changed), and ``<target>/scale-units/scale_units_evaluator.wasm`` is copied in.
3. The copy already in ``src/scale_units/`` (an sdist, which carries it).

The copy is git-ignored; the build fails when none of the three is there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

COMPONENT_FILE = "scale_units_evaluator.wasm"


class ComponentBuildHook(BuildHookInterface):
    """Copies the component into ``src/scale_units/`` for the wheel and the sdist."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        destination = root / "src" / "scale_units" / COMPONENT_FILE
        source = _component_source(root, destination)
        if source != destination:
            data = source.read_bytes()
            if not destination.exists() or destination.read_bytes() != data:
                shutil.copyfile(source, destination)
        self.app.display_info(f"scale-units: packing the component from {source}")


def _component_source(root: Path, packaged: Path) -> Path:
    override = os.environ.get("SCALE_UNITS_WASM")
    if override:
        path = Path(override)
        if not path.is_file():
            raise RuntimeError(f"SCALE_UNITS_WASM={override} is not a file")
        return path
    workspace = root.parent
    if (workspace / "Cargo.toml").is_file() and (workspace / "wit" / "evaluator.wit").is_file():
        target = Path(os.environ.get("CARGO_TARGET_DIR") or workspace / "target")
        built = target / "scale-units" / COMPONENT_FILE
        cargo = os.environ.get("CARGO", "cargo")
        if shutil.which(cargo) is None:
            raise RuntimeError(
                f"building scale-units needs cargo to build the component ({cargo} not found); "
                "or set SCALE_UNITS_WASM to a built scale_units_evaluator.wasm"
            )
        subprocess.run([cargo, "xtask", "component"], cwd=workspace, check=True)
        if not built.is_file():
            raise RuntimeError(f"cargo xtask component did not write {built}")
        return built
    if packaged.is_file():
        return packaged
    raise RuntimeError(
        "no evaluator component: build inside the Scale Units workspace (needs cargo), "
        "or set SCALE_UNITS_WASM to a built scale_units_evaluator.wasm"
    )
