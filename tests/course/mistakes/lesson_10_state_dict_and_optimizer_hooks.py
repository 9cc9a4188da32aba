"""Mistake catalogue for lesson 10, state-dict and optimizer hooks. The format of an entry is
described in tests/course/test_mistake_catalogue.py."""


def _migrate(body):
    """A migrate_checkpoint_keys cell whose hook body is `body` (indented 8 spaces)."""
    return f'''
def migrate_checkpoint_keys(module, renames):
    def rename(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
{body}
    return module.register_load_state_dict_pre_hook(rename)
'''


def _ema(setup, update, register="optimizer.register_step_post_hook(update)"):
    """An attach_weight_ema cell: `setup` makes `ema`, `update` is the hook body (8 spaces)."""
    return f'''
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook


def attach_weight_ema(model, optimizer, decay):
    parameters = dict(model.named_parameters())
{setup}

    def update(*args):
{update}

    return ema, {register}
'''


_COPY = "    ema = {name: p.detach().clone() for name, p in parameters.items()}"
_UPDATE = '''        with torch.no_grad():
            for name, p in parameters.items():
                ema[name].mul_(decay).add_(p, alpha=1 - decay)'''

ENTRIES = [
    # ------------------------------------------------------------------ migrate_checkpoint_keys
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="ignores the prefix",
         source=_migrate('''        for old, new in renames.items():
            if old in state_dict:
                state_dict[new] = state_dict.pop(old)'''),
         expect=["inside a bigger model", "prefix"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="builds and returns a new dict",
         source=_migrate('''        new_dict = {}
        for key, value in state_dict.items():
            local = key[len(prefix):] if key.startswith(prefix) else None
            new_dict[prefix + renames[local] if local in renames else key] = value
        return new_dict'''),
         expect=["return value is ignored", "in place"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="rebinds the state_dict name",
         source=_migrate('''        state_dict = {(prefix + renames[key[len(prefix):]] if key[len(prefix):] in renames else key): value
                      for key, value in state_dict.items()}'''),
         expect=["rebinding", "in place"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="copies the old keys instead of moving them",
         source=_migrate('''        for old, new in renames.items():
            if prefix + old in state_dict:
                state_dict[prefix + new] = state_dict[prefix + old]'''),
         expect=["copied", "state_dict.pop"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="matches keys that end with an old name",
         source=_migrate('''        for key in list(state_dict):
            for old, new in renames.items():
                if key.endswith(old):
                    state_dict[key[:-len(old)] + new] = state_dict.pop(key)'''),
         expect=["only end with", "prefix + old"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="replaces the old text anywhere in a key",
         source=_migrate('''        for key in list(state_dict):
            for old, new in renames.items():
                if old in key:
                    state_dict[key.replace(old, new)] = state_dict.pop(key)
                    break'''),
         expect=["only end with", "exactly"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="pairs old and new keys by position",
         source=_migrate('''        found = [key for key in state_dict if key[len(prefix):] in renames]
        for key, new in zip(found, renames.values()):
            state_dict[prefix + new] = state_dict.pop(key)'''),
         expect=["by name", "order"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="registers a load post-hook that forgives the keys",
         source='''
def migrate_checkpoint_keys(module, renames):
    def forgive(module, incompatible_keys):
        incompatible_keys.missing_keys.clear()
        incompatible_keys.unexpected_keys.clear()

    return module.register_load_state_dict_post_hook(forgive)
''',
         expect=["registered no load_state_dict pre-hook"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="fails on a checkpoint already in the new names",
         source=_migrate('''        for old, new in renames.items():
            state_dict[prefix + new] = state_dict.pop(prefix + old)'''),
         expect=["keyerror"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="returns nothing",
         source='''
def migrate_checkpoint_keys(module, renames):
    def rename(module, state_dict, prefix, *rest):
        for old, new in renames.items():
            if prefix + old in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)

    module.register_load_state_dict_pre_hook(rename)
''',
         expect=["returned none", "removablehandle"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="hard-codes the lesson's renames",
         source=_migrate('''        fixed = {"fc.weight": "classifier.weight", "fc.bias": "classifier.bias"}
        fixed.update({f"bn.{name}": f"norm.{name}"
                      for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")})
        for old, new in fixed.items():
            if prefix + old in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)'''),
         expect=["exactly the keys that `renames` lists"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="keeps the prefix of its first call",
         source=_migrate('''        first = seen.setdefault("prefix", prefix)
        for old, new in renames.items():
            if first + old in state_dict:
                state_dict[first + new] = state_dict.pop(first + old)''').replace(
             "    def rename", "    seen = {}\n\n    def rename"),
         expect=["prefix", "it receives"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="moves to the new key without the prefix",
         source=_migrate('''        for old, new in renames.items():
            if prefix + old in state_dict:
                state_dict[new] = state_dict.pop(prefix + old)'''),
         expect=["did not arrive", "prefix + new"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="uses up renames at the first load",
         source=_migrate('''        while renames:
            old, new = renames.popitem()
            if prefix + old in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)'''),
         expect=["strict=true", "every load", "renames"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="keeps only the renamed keys of the module",
         source=_migrate('''        moved = {prefix + new: state_dict[prefix + old] for old, new in renames.items()
                 if prefix + old in state_dict}
        for key in [key for key in state_dict if key.startswith(prefix)]:
            del state_dict[key]
        state_dict.update(moved)'''),
         expect=["removed", "does not list"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="adds the prefix twice",
         source=_migrate('''        for old, new in renames.items():
            if prefix + old in state_dict:
                state_dict[prefix + prefix + new] = state_dict.pop(prefix + old)'''),
         expect=["moved, but to", "exactly prefix + new"]),
    dict(exercise="migrate_checkpoint_keys", kind="right", why="one pass over the keys, *rest and a comprehension",
         source='''
def migrate_checkpoint_keys(module, renames):
    full = dict(renames)

    def rename(module, state_dict, prefix, *rest):
        moves = {key: prefix + full[key[len(prefix):]] for key in state_dict
                 if key.startswith(prefix) and key[len(prefix):] in full}
        for old_key, new_key in moves.items():
            state_dict[new_key] = state_dict.pop(old_key)

    return module.register_load_state_dict_pre_hook(rename)
''',
         expect=[]),
    dict(exercise="migrate_checkpoint_keys", kind="right", why="a callable object as the hook",
         source='''
class _Renamer:
    def __init__(self, renames):
        self.renames = renames

    def __call__(self, module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        for old in list(self.renames):
            value = state_dict.pop(prefix + old, None)
            if value is not None:
                state_dict[prefix + self.renames[old]] = value


def migrate_checkpoint_keys(module, renames):
    return module.register_load_state_dict_pre_hook(_Renamer(renames))
''',
         expect=[]),
    dict(exercise="migrate_checkpoint_keys", kind="right", why="a new dict copied back with clear and update",
         source=_migrate('''        moved = {}
        for key, value in state_dict.items():
            local = key[len(prefix):] if key.startswith(prefix) else None
            moved[prefix + renames[local] if local in renames else key] = value
        state_dict.clear()
        state_dict.update(moved)'''),
         expect=[]),
    dict(exercise="migrate_checkpoint_keys", kind="right", why="a bound method as the hook",
         source='''
class _Migration:
    def __init__(self, renames):
        self.renames = renames

    def rename(self, module, state_dict, prefix, *rest):
        for old, new in self.renames.items():
            if prefix + old in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)


def migrate_checkpoint_keys(module, renames):
    return module.register_load_state_dict_pre_hook(_Migration(renames).rename)
''',
         expect=[]),

    # ------------------------------------------------------------------ attach_weight_ema
    dict(exercise="attach_weight_ema", kind="wrong", why="a step pre-hook",
         source=_ema(_COPY, _UPDATE, "optimizer.register_step_pre_hook(update)"),
         expect=["before", "register_step_post_hook"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="ema entries are the parameters",
         source=_ema("    ema = {name: p for name, p in parameters.items()}", "        pass"),
         expect=["parameter itself", "clone()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="detach without clone shares memory",
         source=_ema("    ema = {name: p.detach() for name, p in parameters.items()}", _UPDATE),
         expect=["shares its memory", "clone()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="decay and 1 - decay swapped",
         source=_ema(_COPY, '''        with torch.no_grad():
            for name, p in parameters.items():
                ema[name] = (1 - decay) * ema[name] + decay * p'''),
         expect=["swapped"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="keeps autograd history",
         source=_ema(_COPY, '''        for name, p in parameters.items():
            ema[name] = decay * ema[name] + (1 - decay) * p'''),
         expect=["requires grad", "torch.no_grad()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="a forward hook on the model",
         source=_ema(_COPY, _UPDATE, "model.register_forward_hook(update)"),
         expect=["did not change", "register_step_post_hook", "forward hook"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="only the first parameter group",
         source=_ema(_COPY, '''        with torch.no_grad():
            for p in optimizer.param_groups[0]["params"]:
                name = next(n for n, q in parameters.items() if q is p)
                ema[name].mul_(decay).add_(p, alpha=1 - decay)'''),
         expect=["parameter group 1", "every group"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="a global step post-hook",
         source=_ema(_COPY, _UPDATE, "register_optimizer_step_post_hook(update)"),
         expect=["another optimizer", "global", "optimizer.register_step_post_hook"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="rebinds the dict in the hook",
         source='''
import torch


def attach_weight_ema(model, optimizer, decay):
    parameters = dict(model.named_parameters())
    ema = {name: p.detach().clone() for name, p in parameters.items()}

    def update(optimizer, args, kwargs):
        nonlocal ema
        with torch.no_grad():
            ema = {name: decay * ema[name] + (1 - decay) * p for name, p in parameters.items()}

    return ema, optimizer.register_step_post_hook(update)
''',
         expect=["did not change", "dict you returned"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="starts from zeros",
         source=_ema("    ema = {name: torch.zeros_like(p) for name, p in parameters.items()}", _UPDATE),
         expect=["copy of the parameter's value at attach time"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="returns a list of handles",
         source=_ema(_COPY, _UPDATE, "[optimizer.register_step_post_hook(update)]"),
         expect=["as handle", "removablehandle"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="averages model.state_dict(), buffers too",
         source='''
import torch


def attach_weight_ema(model, optimizer, decay):
    ema = {name: value.clone() for name, value in model.state_dict().items()}

    def update(optimizer, args, kwargs):
        current = model.state_dict()
        for name in ema:
            ema[name].mul_(decay).add_(current[name], alpha=1 - decay)

    return ema, optimizer.register_step_post_hook(update)
''',
         expect=["buffers", "named_parameters()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="leaves out the frozen parameters",
         source=_ema("    ema = {name: p.detach().clone() for name, p in parameters.items() if p.requires_grad}",
                     '''        with torch.no_grad():
            for name in ema:
                ema[name].mul_(decay).add_(parameters[name], alpha=1 - decay)'''),
         expect=["frozen parameters", "belong in ema"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="writes the average back into the parameters",
         source=_ema(_COPY, _UPDATE + '''
                p.copy_(ema[name])'''),
         expect=["changed the model's parameters"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="moves the parameters towards the average",
         source=_ema(_COPY, '''        with torch.no_grad():
            for name, p in parameters.items():
                p.lerp_(ema[name], decay)'''),
         expect=["changed the model's parameters", "never the parameter"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="keys are the parameters, not their names",
         source=_ema("    ema = {p: p.detach().clone() for p in parameters.values()}", '''        with torch.no_grad():
            for p, average in ema.items():
                average.mul_(decay).add_(p, alpha=1 - decay)'''),
         expect=["keys of type parameter", "named_parameters()"]),
    dict(exercise="attach_weight_ema", kind="right", why="a callable object, copies made with empty_like and copy_",
         source='''
import torch


class _Average:
    def __init__(self, model, decay):
        self.model, self.decay = model, decay
        self.values = {name: torch.empty_like(p).copy_(p.detach()) for name, p in model.named_parameters()}

    @torch.no_grad()
    def __call__(self, optimizer, args, kwargs):
        for name, p in self.model.named_parameters():
            self.values[name].copy_(self.decay * self.values[name] + (1 - self.decay) * p)


def attach_weight_ema(model, optimizer, decay):
    average = _Average(model, decay)
    return average.values, optimizer.register_step_post_hook(average)
''',
         expect=[]),
    dict(exercise="attach_weight_ema", kind="right", why="only parameters with a gradient are updated",
         source=_ema(_COPY, '''        with torch.no_grad():
            for name, p in parameters.items():
                if p.grad is not None:
                    ema[name].mul_(decay).add_(p, alpha=1 - decay)'''),
         expect=[]),
    dict(exercise="attach_weight_ema", kind="right", why="lerp_ over model.parameters() zipped with names",
         source='''
import torch


def attach_weight_ema(model, optimizer, decay):
    names = [name for name, _ in model.named_parameters()]
    ema = {name: p.detach().clone() for name, p in model.named_parameters()}

    def update(opt, args, kwargs):
        with torch.no_grad():
            for name, p in zip(names, model.parameters()):
                ema[name].lerp_(p, 1 - decay)

    handle = optimizer.register_step_post_hook(update)
    return ema, handle
''',
         expect=[]),
    dict(exercise="attach_weight_ema", kind="right", why="new tensors from .data, every group walked",
         source='''
def attach_weight_ema(model, optimizer, decay):
    name_of = {id(p): name for name, p in model.named_parameters()}
    ema = {name: p.data.clone() for name, p in model.named_parameters()}

    def update(opt, args, kwargs):
        for group in opt.param_groups:
            for p in group["params"]:
                name = name_of[id(p)]
                ema[name] = decay * ema[name] + (1 - decay) * p.data

    return ema, optimizer.register_step_post_hook(update)
''',
         expect=[]),
]
