import torch

from fairforge.faces.align import face_fraction
from fairforge.faces.attributes import faces_with_attributes
from fairforge.joblog import logged
from fairforge.manifest import read_manifest
from fairforge.training.encoder import train_encoder_on_faces

with logged(snakemake.log[0]):
    i, o, p = snakemake.input, snakemake.output, snakemake.params
    torch.set_num_threads(snakemake.threads)
    settings = dict(p.settings, split="train", seed=p.seed, face_fraction=face_fraction(p.margin))
    sources = read_manifest(i.sources, contract="sources")
    faces = faces_with_attributes(sources, read_manifest(i.faces, contract="faces"))
    trained = train_encoder_on_faces(faces, p.results, settings.pop("arch"), o.model, **settings)
    trained.loss_table().to_csv(o.log_table, index=False)
    print(trained.summary())
