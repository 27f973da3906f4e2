"""Spending less cluster time: adaptive trials, successive halving, cluster-second accounting, replay.

Pure decision code with no I/O: :mod:`~sweeper.search.adaptive` says whether a (launch, point)
keeps measuring, :mod:`~sweeper.search.halving` which configurations go on to the next rung,
:mod:`~sweeper.search.accounting` what a sweep cost in cluster-seconds, and
:mod:`~sweeper.results.replay` how often a strategy would have chosen what the full grid chose.
"""
