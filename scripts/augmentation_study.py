import pandas as pd

from fairforge.joblog import logged
from fairforge.report.figures import augmentation_figure, cross_manipulation_figure
from fairforge.tables.robustness import augmentation_table

with logged(snakemake.log[0]):
    i, o, p = snakemake.input, snakemake.output, snakemake.params
    twins = [tuple(t) for t in p.twins]
    table = augmentation_table(pd.read_csv(i.robustness), twins)
    table.to_csv(o.table, index=False, float_format="%.6g")
    augmentation_figure(table, o.figure, dataset=p.dataset)
    sdaug = [(base, twin) for base, twin, augment in twins if augment == "sdaug"]
    cross_manipulation_figure(pd.read_csv(i.cross), sdaug, o.cross, dataset=p.dataset)
    print(table.loc[table["scope"] != "variant"].to_string(index=False))
