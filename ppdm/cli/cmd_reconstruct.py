"""``ppdm reconstruct``: rebuild a random-substitution release with MR (paper 001 Algorithm 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ppdm.cli.app import DecimalOpt, SepOpt, app
from ppdm.cli.common import console, fail
from ppdm.errors import PPDMError


@app.command(short_help="Rebuild a random-substitution release (analyst side).")
def reconstruct(
    data: Annotated[Path, typer.Argument(help="A random-substitution release (CSV/Parquet).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Reconstructed table, written atomically.")],
    matrices: Annotated[
        Path | None,
        typer.Option("--matrices", "-M", help="Perturbation metadata JSON (default: <data stem>.matrices.json)."),
    ] = None,
    ties: Annotated[str, typer.Option("--ties", help="Order of records with equal released values: random or stable.")] = "random",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random tie order (the analyst's; default 0).")] = 0,
    sep: SepOpt = None,
    decimal: DecimalOpt = None,
) -> None:
    """Estimate each perturbed attribute's distribution (X̂ = M⁻¹y, negatives clipped) and
    rebuild the table one attribute at a time (001 Algorithm 2), for any tree learner."""
    from ppdm.anonymize.random_substitution import SubstitutionMetadata, sidecar_path
    from ppdm.anonymize.reconstruct import reconstruct as mr
    from ppdm.data.io import check_output_table, read_table, write_table

    try:
        side = matrices if matrices is not None else sidecar_path(data)
        check_output_table(out, inputs=(data, side))
        z = read_table(data, sep=sep, decimal=decimal)
        meta = SubstitutionMetadata.load(side)
        if ties not in ("random", "stable"):
            raise PPDMError(f"--ties must be 'random' or 'stable', got {ties!r}")
        from ppdm.cli.progress import progress_bar
        from ppdm.data.types import round_to_decimals, source_decimals

        with progress_bar("reconstructing"):
            r = mr(z, meta, ties=ties, random_state=seed)  # type: ignore[arg-type]  # --ties is checked above
        # no more decimals than the release had (bin centres are arithmetic)
        r = round_to_decimals(r, source_decimals(z, list(meta.attributes)))
        write_table(r, out, date_formats=z.attrs.get("date_formats"))
    except PPDMError as e:
        fail(str(e))
    console.print(f"wrote {out} ({len(r)} rows; {len(meta.attributes)} attribute(s) reconstructed)")
