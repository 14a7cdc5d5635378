import torch

from fairforge.joblog import logged
from fairforge.training.degradation import loss_summary, train_high_to_low

with logged(snakemake.log[0]):
    o, s = snakemake.output, dict(snakemake.params.settings)
    torch.set_num_threads(snakemake.threads)
    result = train_high_to_low(
        s.pop("high_dir"), s.pop("low_dir"), o.generator, sample_sheet=o.samples, **s
    )
    print("\n".join(loss_summary(result.history, s["steps"])))
    print(f"wrote {result.checkpoint} and {result.sample_sheet}")
