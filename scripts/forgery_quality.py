from fairforge.joblog import logged
from fairforge.report.figures import forgery_quality_figure
from fairforge.tables.forgery_quality import card_from_files

with logged(snakemake.log[0]):
    o, p = snakemake.output, snakemake.params
    i = snakemake.input
    card = card_from_files(
        i.fakes, n_boot=p.bootstrap, seed=p.seed, separation=i.separation, compared=i.compared
    )
    card.to_csv(o.table, index=False)
    for method, path in zip(p.methods, o.figures):
        forgery_quality_figure(card, method, path)
    print(card[["dataset", "method", "backend", "group", "differs"]].to_string(index=False))
