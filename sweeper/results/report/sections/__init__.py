"""The report's sections, each a function of a sweep's rows that returns blocks (:mod:`..blocks`).

:mod:`.answer` and :mod:`.memory` (the answer, memory and idle slots), :mod:`.measured` (what was
measured; the dry-run banner is :mod:`sweeper.results.dry_run`'s), :mod:`.method`, per workload
:mod:`.configurations` (time and accuracy per configuration, configurations compared), :mod:`.engines` (Spark vs
Dask) and :mod:`.scaling` (speedup, COST, time vs cost); then :mod:`.search` (adaptive trials, successive halving),
:mod:`.predicted` and :mod:`.failures`. :func:`sweeper.results.report.content.build_report` puts them in order.
"""
