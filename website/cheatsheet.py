"""The hooks cheat sheet's rows, read from website/cheatsheet.yml, which says what each field holds:
the rows are prose, kept as data, and the site and the course tests read them here."""

import pathlib

import yaml

ROWS = yaml.safe_load((pathlib.Path(__file__).parent / "cheatsheet.yml").read_text(encoding="utf-8"))

# Names with "hook" in them that are not hook APIs, so the completeness test skips them.
NOT_HOOK_APIS = {
    "torch.optim.Optimizer.profile_hook_step",  # a decorator that profiles `step`
    "torch.optim.optimizer.hooks",  # the module torch.utils.hooks, imported there
}


def params_of(call):
    """'m.register_forward_hook(hook, *, prepend=False)' -> '(hook, *, prepend=False)'"""
    return call[call.index("("):call.rindex(")") + 1]
