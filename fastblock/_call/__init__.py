"""The call machinery under every front door: the fast path and its cache
(``fastpath``), the general path (``general``, ``execute``), the convert
stage's arguments (``convert``), checks, shapes, threads and other
libraries' arrays. Below it, the engine (``fastblock._engine``); it imports
nothing from the operators above it (``fastblock._ops``)."""
