"""What-if: a sweep's batch times modelled from the structure of the work, to predict shapes it did not measure.

:mod:`.model` fits each engine's model, :mod:`.validation` predicts each measured configuration from the
others, :mod:`.targets` turns another grid into the shapes to predict, :mod:`.forecast` predicts them.
"""
