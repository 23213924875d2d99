"""The annotation web app: runs the paper's participant protocol (§3.2) and exports its data.

Start with ``modprefs app load`` (a study: assignments, stimuli, conversations, audio manifest ->
database), ``modprefs app serve`` (the participant site and the admin export), and
``modprefs app export`` (ratings.csv, trials.csv, participants.csv in the workflow's schemas).
docs/app.md is the user's guide. Submodules: :mod:`.db` (engine, transactions), :mod:`.models`
(tables), :mod:`.loader`, :mod:`.protocol` (measures derived from the event log), :mod:`.service`
(the participant state machine, slots), :mod:`.export`, :mod:`.server` (ASGI app), :mod:`.cli`.
The server's dependencies come with the ``app`` extra: ``pip install 'modprefs[app]'``.
"""
