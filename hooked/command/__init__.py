"""The `hooked` command: its arguments, the options it shares with pytest (shared_options), what it prints
(terminal, result_views), and watching lessons for saves."""
