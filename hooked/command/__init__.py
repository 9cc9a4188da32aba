"""The `hooked` command: its arguments, the options it shares with pytest (shared_options), what it prints
(terminal, result_views), watching lessons for saves, and writing lessons/ from solutions/ (generate),
with backups of any learner's file it replaces."""
