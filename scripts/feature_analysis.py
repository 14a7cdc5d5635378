from fairforge.joblog import logged
from fairforge.manifest import concat_manifests
from fairforge.report import figures
from fairforge.tables.features import feature_mmd_table, tsne_coordinates

with logged(snakemake.log[0]):
    s, o = snakemake.params.settings, snakemake.output
    features = concat_manifests(snakemake.input, contract="features")
    mmd = feature_mmd_table(features, s["reference_group"], s["permutations"], s["seed"])
    mmd.to_csv(o.mmd, index=False, float_format="%.6g")
    print(mmd.to_string(index=False))
    coords = tsne_coordinates(features, s["perplexity"], s["seed"])
    figures.feature_tsne_figure(coords, o.tsne)
    figures.feature_mmd_figure(mmd, o.mmd_figure)
