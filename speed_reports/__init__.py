"""fastblock's speed reports, run by ``python -m speed_reports``: the
speed targets (``targets``), the transpose comparison (``transpose``) and
the peer comparison (``peers``), with what they know of this machine
(``machine``). Not part of the installed package: each report calls
fastblock's public API only, so it measures whichever build comes first on
``sys.path`` (an A/B of two builds runs the same report against each).
"""
