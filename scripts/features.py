import torch

from fairforge.features import feature_sample, network_features
from fairforge.joblog import logged
from fairforge.manifest import read_manifest, write_manifest

with logged(snakemake.log[0]):
    i, p, wc = snakemake.input, snakemake.params, snakemake.wildcards
    torch.set_num_threads(snakemake.threads)
    s = p.settings
    samples = read_manifest(i.samples, contract="samples")
    drawn = feature_sample(samples, s["methods"], s["per_group"], s["split"], s["seed"])
    print(f"{len(drawn)} samples drawn:", drawn.groupby(["method", "group"]).size().to_dict())
    features = network_features(
        i.model,
        drawn,
        p.results,
        wc.detector,
        batch_size=p.inference["batch_size"],
        num_workers=p.inference["num_workers"],
        device=p.device,
    )
    write_manifest(features, snakemake.output[0], contract="features")
