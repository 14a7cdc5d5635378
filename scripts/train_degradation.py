import numpy as np
import torch

from fairforge.perturb.learned_degradation import train_high_to_low
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    s = snakemake.params.settings
    torch.set_num_threads(snakemake.threads)
    result = train_high_to_low(
        s["high_dir"],
        s["low_dir"],
        snakemake.output.generator,
        steps=s["steps"],
        seed=s["seed"],
        batch_size=s["batch_size"],
        device=s["device"],
        sample_sheet=snakemake.output.samples,
    )
    # Loss means over tenths of the run: enough to see whether the critic and the
    # content term settled, without one line per step.
    losses = {name: np.asarray(values) for name, values in result.history.items()}
    for chunk in np.array_split(np.arange(s["steps"]), min(10, s["steps"])):
        means = "  ".join(f"{name} {values[chunk].mean():.4f}" for name, values in losses.items())
        print(f"steps {chunk[0]}-{chunk[-1]}: {means}")
    print(f"wrote {result.checkpoint} and {result.sample_sheet}")
