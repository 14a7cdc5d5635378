from fairforge.joblog import logged
from fairforge.protocol import card_frame, protocol_card

with logged(snakemake.log[0]):
    card = card_frame(protocol_card(snakemake.params.config))
    card.to_csv(snakemake.output[0], index=False)
    print(card.to_string(index=False))
