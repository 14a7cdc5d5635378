"""Column lists shared by the stages that write and read one contract."""

#: The predictions contract: one probability of fake per (sample, detector, variant).
PREDICTION_COLUMNS = ["sample_id", "dataset", "split", "label", "method", "group",
                      "subject_id", "detector", "variant", "score"]
