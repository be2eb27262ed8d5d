"""The operators: each front door, its checked call (``prepare``) and the
table of them (``table``), and ``collate`` over them. Below them, the call
machinery (``fastblock._call``); nothing here is imported from there."""
