"""mkdocs hook: a plot of the benchmark results table of benchmarks/README.md.

The benchmarks page includes benchmarks/README.md itself (one source for the numbers); this hook
reads its results table (`| bench | metric | ours | 0.19.0 | ours/0.19 | target | result |`) and
adds ``assets/benchmarks-ratios.svg``: ours/0.19 per metric, with each target, drawn with
matplotlib when the site is built. A plot a benchmark saved under ``docs/assets/`` (a file whose
name has ``bench`` in it, e.g. ``scale_bench.png``) is shown on the page too; the README links to
it as ``../docs/assets/<file>``, which this hook makes ``assets/<file>`` for the site.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

README = Path(__file__).resolve().parents[2] / "benchmarks" / "README.md"
ASSETS = Path(__file__).resolve().parents[1] / "assets"
PLOT = "assets/benchmarks-ratios.svg"
PAGE = "benchmarks.md"


def results() -> list[tuple[str, float, float | None]]:
    """(bench: metric, ours/0.19, target ratio) for every row that has a ratio."""
    rows = []
    for line in README.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not re.fullmatch(r"[\d.]+", cells[4]):
            continue
        target = re.fullmatch(r"<=\s*([\d.]+)", cells[5])
        label = f"{cells[0]}: {cells[1].replace('`', '')}"
        rows.append((label, float(cells[4]), float(target[1]) if target else None))
    return rows


def plot_svg() -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results()
    if not rows:
        raise ValueError(f"{README}: no results table with an ours/0.19 column")
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.2))
    labels = [r[0] for r in rows][::-1]
    ratios = [r[1] for r in rows][::-1]
    ax.barh(labels, ratios, color="#3f51b5", label="ours / 0.19 (lower is better)")
    for i, (_, _, target) in enumerate(rows[::-1]):
        if target is not None:
            ax.plot([target, target], [i - 0.4, i + 0.4], color="#e91e63", linewidth=2,
                    label="target" if i == 0 or "target" not in ax.get_legend_handles_labels()[1]
                    else None)
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("time or memory of ours relative to toolregistry 0.19 (1.0 = the same)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)
    return out.getvalue()


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, PLOT, content=plot_svg()))
    return files


def saved_plots() -> list[str]:
    """The benchmark plots committed under docs/assets, by name."""
    if not ASSETS.is_dir():
        return []
    return sorted(p.name for p in ASSETS.iterdir()
                  if "bench" in p.name and p.suffix in {".png", ".svg"} and p.name != Path(PLOT).name)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    markdown = markdown.replace("](../docs/assets/", "](assets/")
    shown = [name for name in saved_plots() if f"assets/{name}" not in markdown]
    if shown:
        markdown += "\n\n## Plots saved by the benchmarks\n\n" + "\n\n".join(
            f"![{name}](assets/{name})" for name in shown) + "\n"
    return markdown
