# Grading options (--lessons-dir, --solutions, --report, --time-limit, --course),
# the exercise tests and the progress table come from the course's package.
pytest_plugins = ["hooked.pytest_plugin"]
