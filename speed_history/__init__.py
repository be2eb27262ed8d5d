"""fastblock's speed history: asv's results of main's commits, stored in
this repository (``speed_history/results/``), the dashboard drawn from them,
the backfill that adds commits to them, and the regression check CI runs.

    python -m speed_history.dashboard --out html   # the static site
    python -m speed_history.backfill main~40..main # add commits' results
    python -m speed_history.check                  # HEAD against its parent

Not part of the installed package; see speed_history/README.md.
"""
