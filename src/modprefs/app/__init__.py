"""The annotation web app: runs the paper's participant protocol (§3.2) and exports its data.

Start with ``modprefs app load`` (a study: assignments, stimuli, conversations, audio manifest ->
database), ``modprefs app serve`` (the participant site and the admin export), and
``modprefs app export`` (ratings.csv, trials.csv, participants.csv in the workflow's schemas).
docs/app.md is the user's guide. Submodules: :mod:`.db` (engine, transactions, opening an existing
study), :mod:`.models` (tables), :mod:`.loader` (with the WAV checks), :mod:`.protocol` (measures
derived from the event log), :mod:`.plausibility` (the server's listening and reading checks),
:mod:`.headphones` (the antiphase headphone screening), :mod:`.ratelimit`, :mod:`.service` (the
participant state machine, slots, the event log), :mod:`.export`, :mod:`.server` (ASGI app), :mod:`.cli`.
The server's dependencies come with the ``app`` extra: ``pip install 'modprefs[app]'``.
"""
