import pandas as pd
import torch

from fairforge.encoders.trainable import train_encoder_on_faces
from fairforge.faces.align import face_fraction
from fairforge.faces.attributes import faces_with_attributes
from fairforge.manifest import read_manifest
from fairforge.workflow import logged

with logged(snakemake.log[0]):
    torch.set_num_threads(snakemake.threads)
    settings = dict(snakemake.params.settings)
    faces = faces_with_attributes(
        read_manifest(snakemake.input.sources, contract="sources"),
        read_manifest(snakemake.input.faces, contract="faces"),
    )
    trained = train_encoder_on_faces(
        faces,
        snakemake.params.results,
        settings.pop("arch"),
        snakemake.output.model,
        split="train",
        seed=snakemake.params.seed,
        face_fraction=face_fraction(snakemake.params.margin),
        **settings,
    )
    pd.DataFrame({"step": range(1, len(trained.losses) + 1), "loss": trained.losses}).to_csv(
        snakemake.output.log_table, index=False
    )
    print(
        f"{trained.config['arch']}: {trained.config['n_classes']} identities, "
        f"{len(trained.losses)} steps, loss {trained.losses[0]:.3f} -> {trained.losses[-1]:.3f}"
    )
