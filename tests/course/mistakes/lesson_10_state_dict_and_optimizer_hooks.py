"""Mistake catalogue for lesson 10, state-dict and optimizer hooks. The format of an entry is
described in tests/course/test_mistake_catalogue.py."""

from mistakes import edited, reference


ENTRIES = [
    # ------------------------------------------------------------------ migrate_checkpoint_keys
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="ignores the prefix",
         clause="prefix",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "if old in state_dict:\n"
                        "                state_dict[new] = state_dict.pop(old)")),
         mistake="10.migrate_checkpoint_keys.ignores-prefix",
         expect=["inside a bigger model", "prefix"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="builds and returns a new dict",
         clause="in-place",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "new_dict = {}\n"
                        "        for key, value in state_dict.items():\n"
                        "            local = key[len(prefix):] if key.startswith(prefix) else None\n"
                        "            new_dict[prefix + renames[local] if local in renames else key] = value\n"
                        "        return new_dict")),
         mistake="10.migrate_checkpoint_keys.old-keys-not-renamed",
         expect=["return value is ignored", "in place"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="rebinds the state_dict name",
         clause="in-place",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "state_dict = {(prefix + renames[key[len(prefix):]] if key[len(prefix):] in renames else key): value\n"
                        "                      for key, value in state_dict.items()}")),
         mistake="10.migrate_checkpoint_keys.old-keys-not-renamed",
         expect=["rebinding", "in place"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="copies the old keys instead of moving them",
         clause="old-removed",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "state_dict[prefix + new] = state_dict[prefix + old]")),
         mistake="10.migrate_checkpoint_keys.copies-old-keys",
         expect=["copied", "state_dict.pop"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="matches keys that end with an old name",
         clause="others-alone",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "for key in list(state_dict):\n"
                        "            for old, new in renames.items():\n"
                        "                if key.endswith(old):\n"
                        "                    state_dict[key[:-len(old)] + new] = state_dict.pop(key)")),
         mistake="10.migrate_checkpoint_keys.renames-by-suffix",
         expect=["only end with", "prefix + old"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="replaces the old text anywhere in a key",
         clause="others-alone",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "for key in list(state_dict):\n"
                        "            for old, new in renames.items():\n"
                        "                if old in key:\n"
                        "                    state_dict[key.replace(old, new)] = state_dict.pop(key)\n"
                        "                    break")),
         mistake="10.migrate_checkpoint_keys.renames-by-suffix",
         expect=["only end with", "exactly"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="pairs old and new keys by position",
         clause="moves",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "found = [key for key in state_dict if key[len(prefix):] in renames]\n"
                        "        for key, new in zip(found, renames.values()):\n"
                        "            state_dict[prefix + new] = state_dict.pop(key)")),
         mistake="10.migrate_checkpoint_keys.values-at-wrong-keys",
         expect=["by name", "order"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="registers a load post-hook that forgives the keys",
         clause="pre-hook",
         source='''
def migrate_checkpoint_keys(module, renames):
    def forgive(module, incompatible_keys):
        incompatible_keys.missing_keys.clear()
        incompatible_keys.unexpected_keys.clear()

    return module.register_load_state_dict_post_hook(forgive)
''',
         mistake="10.migrate_checkpoint_keys.no-load-pre-hook",
         expect=["registered no load_state_dict pre-hook"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="fails on a checkpoint already in the new names",
         clause="absent-skipped",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "state_dict[prefix + new] = state_dict.pop(prefix + old)")),
         mistake="10.migrate_checkpoint_keys.pops-absent-key",
         expect=["keyerror"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="returns nothing",
         clause="handle",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("    return module.register_load_state_dict_pre_hook(rename)",
                        "    module.register_load_state_dict_pre_hook(rename)")),
         mistake="10.migrate_checkpoint_keys.no-handle",
         expect=["returned none", "removablehandle"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="hard-codes the lesson's renames",
         clause="renames",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():",
                        'fixed = {"fc.weight": "classifier.weight", "fc.bias": "classifier.bias"}\n'
                        '        fixed.update({f"bn.{name}": f"norm.{name}"\n'
                        '                      for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")})\n'
                        "        for old, new in fixed.items():")),
         mistake="10.migrate_checkpoint_keys.old-keys-not-renamed",
         expect=["exactly the keys that `renames` lists"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="keeps the prefix of its first call",
         clause="each-load",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("    def rename(", "    seen = {}\n\n    def rename("),
                       ("error_msgs):", 'error_msgs):\n        first = seen.setdefault("prefix", prefix)'),
                       ("if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "if first + old in state_dict:\n"
                        "                state_dict[first + new] = state_dict.pop(first + old)")),
         mistake="10.migrate_checkpoint_keys.ignores-prefix",
         expect=["prefix", "it receives"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="moves to the new key without the prefix",
         clause="moves",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "state_dict[new] = state_dict.pop(prefix + old)")),
         mistake="10.migrate_checkpoint_keys.new-key-without-prefix",
         expect=["did not arrive", "prefix + new"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="uses up renames at the first load",
         clause="each-load",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():",
                        "while renames:\n"
                        "            old, new = renames.popitem()")),
         mistake="10.migrate_checkpoint_keys.renames-only-once",
         expect=["strict=true", "every load", "renames"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="keeps only the renamed keys of the module",
         clause="others-alone",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "moved = {prefix + new: state_dict[prefix + old] for old, new in renames.items()\n"
                        "                 if prefix + old in state_dict}\n"
                        "        for key in [key for key in state_dict if key.startswith(prefix)]:\n"
                        "            del state_dict[key]\n"
                        "        state_dict.update(moved)")),
         mistake="10.migrate_checkpoint_keys.removes-other-keys",
         expect=["removed", "does not list"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="adds the prefix twice",
         clause="moves",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "state_dict[prefix + prefix + new] = state_dict.pop(prefix + old)")),
         mistake="10.migrate_checkpoint_keys.moves-to-wrong-keys",
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
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "moved = {}\n"
                        "        for key, value in state_dict.items():\n"
                        "            local = key[len(prefix):] if key.startswith(prefix) else None\n"
                        "            moved[prefix + renames[local] if local in renames else key] = value\n"
                        "        state_dict.clear()\n"
                        "        state_dict.update(moved)")),
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
         clause="after-step",
         source=edited(reference("attach_weight_ema"),
                       ("return ema, optimizer.register_step_post_hook(update)",
                        "return ema, optimizer.register_step_pre_hook(update)")),
         mistake="10.attach_weight_ema.step-pre-hook",
         expect=["before", "register_step_post_hook"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="ema entries are the parameters",
         clause="copy",
         source=edited(reference("attach_weight_ema"),
                       ("ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "ema = {name: parameter for name, parameter in parameters.items()}"),
                       ("\n    @torch.no_grad()", ""),
                       ("for name, parameter in parameters.items():\n"
                        "            ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "pass")),
         mistake="10.attach_weight_ema.stores-the-parameter",
         expect=["parameter itself", "clone()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="detach without clone shares memory",
         clause="copy",
         source=edited(reference("attach_weight_ema"),
                       ("ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "ema = {name: parameter.detach() for name, parameter in parameters.items()}")),
         mistake="10.attach_weight_ema.stores-the-parameter",
         expect=["shares its memory", "clone()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="decay and 1 - decay swapped",
         clause="formula",
         source=edited(reference("attach_weight_ema"),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "ema[name] = (1 - decay) * ema[name] + decay * parameter")),
         mistake="10.attach_weight_ema.decay-swapped",
         expect=["swapped"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="keeps autograd history",
         clause="no-autograd",
         source=edited(reference("attach_weight_ema"),
                       ("\n    @torch.no_grad()", ""),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "ema[name] = decay * ema[name] + (1 - decay) * parameter")),
         mistake="10.attach_weight_ema.update-keeps-graph",
         expect=["requires grad", "torch.no_grad()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="a forward hook on the model",
         clause="post-hook",
         source=edited(reference("attach_weight_ema"),
                       ("return ema, optimizer.register_step_post_hook(update)",
                        "return ema, model.register_forward_hook(update)")),
         mistake="10.attach_weight_ema.not-updated",
         expect=["did not change", "register_step_post_hook", "forward hook"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="only the first parameter group",
         clause="all-groups",
         source=edited(reference("attach_weight_ema"),
                       ("for name, parameter in parameters.items():",
                        'for parameter in optimizer.param_groups[0]["params"]:\n'
                        "            name = next(n for n, q in parameters.items() if q is parameter)")),
         mistake="10.attach_weight_ema.first-group-only",
         expect=["parameter group 1", "every group"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="a global step post-hook",
         clause="post-hook",
         source=edited(reference("attach_weight_ema"),
                       ("import torch",
                        "import torch\n"
                        "from torch.optim.optimizer import register_optimizer_step_post_hook"),
                       ("return ema, optimizer.register_step_post_hook(update)",
                        "return ema, register_optimizer_step_post_hook(update)")),
         mistake="10.attach_weight_ema.global-hook",
         expect=["another optimizer", "global", "optimizer.register_step_post_hook"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="rebinds the dict in the hook",
         clause="every-entry",
         source=edited(reference("attach_weight_ema"),
                       ("    @torch.no_grad()\n", ""),
                       ("        for name, parameter in parameters.items():\n"
                        "            ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "        nonlocal ema\n"
                        "        with torch.no_grad():\n"
                        "            ema = {name: decay * ema[name] + (1 - decay) * parameter for name, parameter in parameters.items()}")),
         mistake="10.attach_weight_ema.not-updated",
         expect=["did not change", "dict you returned"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="starts from zeros",
         clause="copy",
         source=edited(reference("attach_weight_ema"),
                       ("ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "ema = {name: torch.zeros_like(parameter) for name, parameter in parameters.items()}")),
         mistake="10.attach_weight_ema.wrong-start-value",
         expect=["copy of the parameter's value at attach time"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="returns a list of handles",
         clause="handle",
         source=edited(reference("attach_weight_ema"),
                       ("return ema, optimizer.register_step_post_hook(update)",
                        "return ema, [optimizer.register_step_post_hook(update)]")),
         mistake="10.attach_weight_ema.handle-in-a-list",
         expect=["as handle", "removablehandle"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="averages model.state_dict(), buffers too",
         clause="no-buffers",
         source=edited(reference("attach_weight_ema"),
                       ("    parameters = dict(model.named_parameters())\n"
                        "    ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "    ema = {name: value.clone() for name, value in model.state_dict().items()}"),
                       ("        for name, parameter in parameters.items():\n"
                        "            ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "        current = model.state_dict()\n"
                        "        for name in ema:\n"
                        "            ema[name].mul_(decay).add_(current[name], alpha=1 - decay)")),
         mistake="10.attach_weight_ema.averages-buffers",
         expect=["buffers", "named_parameters()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="leaves out the frozen parameters",
         clause="frozen-keys",
         source=edited(reference("attach_weight_ema"),
                       ("ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "ema = {name: parameter.detach().clone() for name, parameter in parameters.items() if parameter.requires_grad}"),
                       ("for name, parameter in parameters.items():\n"
                        "            ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "for name in ema:\n"
                        "            ema[name].mul_(decay).add_(parameters[name], alpha=1 - decay)")),
         mistake="10.attach_weight_ema.skips-frozen",
         expect=["frozen parameters", "belong in ema"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="writes the average back into the parameters",
         clause="params-unchanged",
         source=edited(reference("attach_weight_ema"),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "ema[name].mul_(decay).add_(parameter, alpha=1 - decay)\n"
                        "            parameter.copy_(ema[name])")),
         mistake="10.attach_weight_ema.changes-parameters",
         expect=["changed the model's parameters"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="moves the parameters towards the average",
         clause="params-unchanged",
         source=edited(reference("attach_weight_ema"),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "parameter.lerp_(ema[name], decay)")),
         mistake="10.attach_weight_ema.changes-parameters",
         expect=["changed the model's parameters", "never the parameter"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="keys are the parameters, not their names",
         clause="keys",
         source=edited(reference("attach_weight_ema"),
                       ("ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "ema = {parameter: parameter.detach().clone() for parameter in parameters.values()}"),
                       ("for name, parameter in parameters.items():\n"
                        "            ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "for parameter, average in ema.items():\n"
                        "            average.mul_(decay).add_(parameter, alpha=1 - decay)")),
         mistake="10.attach_weight_ema.keys-not-names",
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
    dict(exercise="attach_weight_ema", kind="wrong", why="only parameters with a gradient are updated",
         clause="no-grad-params",
         source=edited(reference("attach_weight_ema"),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "if parameter.grad is not None:\n"
                        "                ema[name].mul_(decay).add_(parameter, alpha=1 - decay)")),
         mistake="10.attach_weight_ema.skips-params-without-grad",
         expect=["did not change", "got no gradient", "whether or not its parameter has a gradient"]),
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
    dict(exercise="attach_weight_ema", kind="wrong", why="new tensors from .data, every group walked",
         clause="no-grad-params",
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
         mistake="10.attach_weight_ema.skips-params-without-grad",
         expect=["'1.weight'", "changed by hand", "or is in the optimizer"]),

    # ------------------------------------------------------------------ migrate_checkpoint_keys: more clauses
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="skips the rename when the new key is there",
         clause="both-keys",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("if prefix + old in state_dict:",
                        "if prefix + old in state_dict and prefix + new not in state_dict:")),
         mistake="10.migrate_checkpoint_keys.old-key-left-beside-new",
         expect=["both the old and the new key", "stayed in the dict", "replaces the new key's"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="setdefault keeps the new key's value",
         clause="both-keys",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "state_dict.setdefault(prefix + new, state_dict.pop(prefix + old))")),
         mistake="10.migrate_checkpoint_keys.keeps-new-over-old",
         expect=["holds the value the checkpoint had under the new key", "old key's value is moved over"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="update with the renamed keys, without removing",
         clause="old-removed",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "moved = {prefix + new: state_dict[prefix + old] for old, new in renames.items()\n"
                        "                 if prefix + old in state_dict}\n"
                        "        state_dict.update(moved)")),
         mistake="10.migrate_checkpoint_keys.copies-old-keys",
         expect=["copied", "remove each old key"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="the hook removes itself after the first load",
         clause="each-load",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("                state_dict[prefix + new] = state_dict.pop(prefix + old)\n",
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)\n"
                        "        handle.remove()  # one checkpoint to migrate: done\n"),
                       ("    return module.register_load_state_dict_pre_hook(rename)",
                        "    handle = module.register_load_state_dict_pre_hook(rename)\n"
                        "    return handle")),
         mistake="10.migrate_checkpoint_keys.renames-only-once",
         expect=["every load"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="returns handle.remove instead of the handle",
         clause="handle",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("return module.register_load_state_dict_pre_hook(rename)",
                        "return module.register_load_state_dict_pre_hook(rename).remove")),
         mistake="10.migrate_checkpoint_keys.no-handle",
         expect=["expected the removablehandle"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="renames the local part with str.replace",
         clause="others-alone",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "for key in [key for key in state_dict if key.startswith(prefix)]:\n"
                        "            local = key[len(prefix):]\n"
                        "            for old, new in renames.items():\n"
                        "                if old in local:\n"
                        "                    state_dict[prefix + local.replace(old, new)] = state_dict.pop(key)\n"
                        "                    break")),
         mistake="10.migrate_checkpoint_keys.renames-by-suffix",
         expect=["only end with", "exactly"]),
    dict(exercise="migrate_checkpoint_keys", kind="right", why="the private hook without the module argument",
         source="""
def migrate_checkpoint_keys(module, renames):
    def rename(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        for old in renames:
            if prefix + old in state_dict:
                state_dict[prefix + renames[old]] = state_dict.pop(prefix + old)

    return module._register_load_state_dict_pre_hook(rename)
""",
         expect=[]),

    # ------------------------------------------------------------------ attach_weight_ema: more clauses
    dict(exercise="attach_weight_ema", kind="wrong", why="the Parameters of state_dict(keep_vars=True)",
         clause="tied-once",
         source=edited(reference("attach_weight_ema"),
                       ("import torch", "import torch\nfrom torch import nn"),
                       ("    parameters = dict(model.named_parameters())",
                        "    parameters = {name: value for name, value in model.state_dict(keep_vars=True).items()\n"
                        "                  if isinstance(value, nn.Parameter)}")),
         mistake="10.attach_weight_ema.tied-twice",
         expect=["'5.weight' is the same parameter as '3.weight'", "tied", "one entry"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="updates only parameters that require grad",
         clause="no-grad-params",
         source=edited(reference("attach_weight_ema"),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "if parameter.requires_grad:\n"
                        "                ema[name].mul_(decay).add_(parameter, alpha=1 - decay)")),
         mistake="10.attach_weight_ema.skips-params-without-grad",
         expect=["'1.weight'", "changed by hand", "or is in the optimizer"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="updates only the optimizer's parameters",
         clause="no-grad-params",
         source="""
import torch


def attach_weight_ema(model, optimizer, decay):
    name_of = {id(p): name for name, p in model.named_parameters()}
    ema = {name: p.detach().clone() for name, p in model.named_parameters()}

    @torch.no_grad()
    def update(opt, args, kwargs):
        for group in opt.param_groups:
            for p in group["params"]:
                ema[name_of[id(p)]].lerp_(p, 1 - decay)

    return ema, optimizer.register_step_post_hook(update)
""",
         mistake="10.attach_weight_ema.skips-params-without-grad",
         expect=["'1.weight'", "changed by hand", "every entry"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="computes the SGD step itself in a pre-hook",
         clause="any-optimizer",
         source=edited(reference("attach_weight_ema"),
                       ("    ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "    ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}\n"
                        '    lr_of = {id(p): group["lr"] for group in optimizer.param_groups for p in group["params"]}'),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "stepped = parameter - lr_of[id(parameter)] * parameter.grad \\\n"
                        "                if parameter.grad is not None and id(parameter) in lr_of else parameter\n"
                        "            ema[name].mul_(decay).add_(stepped, alpha=1 - decay)"),
                       ("optimizer.register_step_post_hook(update)", "optimizer.register_step_pre_hook(update)")),
         mistake="10.attach_weight_ema.computes-sgd-step",
         expect=["an sgd step", "not sgd", "any optimizer"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="returns only ema",
         clause="returns-pair",
         source=edited(reference("attach_weight_ema"),
                       ("return ema, optimizer.register_step_post_hook(update)",
                        "optimizer.register_step_post_hook(update)\n"
                        "    return ema")),
         mistake="10.attach_weight_ema.not-a-pair",
         expect=["expected a pair (ema, handle)"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="returns the hook function as the handle",
         clause="handle",
         source=edited(reference("attach_weight_ema"),
                       ("return ema, optimizer.register_step_post_hook(update)",
                        "optimizer.register_step_post_hook(update)\n"
                        "    return ema, update")),
         mistake="10.attach_weight_ema.no-handle",
         expect=["as handle", "removablehandle"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="clone without detach",
         clause="no-grad-start",
         source=edited(reference("attach_weight_ema"),
                       ("ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "ema = {name: parameter.clone() for name, parameter in parameters.items()}")),
         mistake="10.attach_weight_ema.start-requires-grad",
         expect=["requires grad", "parameter.detach().clone()"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="lerp_ with decay as the weight",
         clause="formula",
         source=edited(reference("attach_weight_ema"),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "ema[name].lerp_(parameter, decay)")),
         mistake="10.attach_weight_ema.decay-swapped",
         expect=["swapped"]),
    dict(exercise="attach_weight_ema", kind="right", why="a dict comprehension over named_parameters each step",
         source="""
import torch


def attach_weight_ema(model, optimizer, decay):
    ema = {name: torch.tensor(p.detach().numpy().copy()) for name, p in model.named_parameters()}

    def update(opt, args, kwargs):
        with torch.no_grad():
            fresh = {name: decay * ema[name] + (1 - decay) * p for name, p in model.named_parameters()}
        ema.update(fresh)

    return ema, optimizer.register_step_post_hook(update)
""",
         expect=[]),

    # ------------------------------------------------------------------ more wrong ways
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="moves keys while iterating the dict",
         clause="moves",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("        for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "        for key in state_dict:\n"
                        "            local = key[len(prefix):]\n"
                        "            if key.startswith(prefix) and local in renames:\n"
                        "                state_dict[prefix + renames[local]] = state_dict.pop(key)")),
         mistake="10.migrate_checkpoint_keys.changes-dict-while-iterating",
         expect=["mutated during iteration"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="pop with the new key's value as the default",
         clause="absent-skipped",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "            state_dict[prefix + new] = state_dict.pop(prefix + old, state_dict.get(prefix + new))")),
         mistake="10.migrate_checkpoint_keys.none-for-absent-key",
         expect=["under neither name", "stored none", "skip the renames whose old key is absent"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="pop with None, stored under the new key",
         clause="absent-skipped",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "            value = state_dict.pop(prefix + old, None)\n"
                        "            state_dict[prefix + new] = value")),
         mistake="10.migrate_checkpoint_keys.none-for-absent-key",
         expect=["with the new names only", "stored none"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="reads renames as new to old",
         clause="moves",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():", "for new, old in renames.items():")),
         mistake="10.migrate_checkpoint_keys.old-keys-not-renamed",
         expect=["were not renamed", "prefix + old to prefix + new"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="the parameters of a deep copy of the model",
         clause="no-grad-start",
         source=edited(reference("attach_weight_ema"),
                       ("import torch", "import copy\nimport torch"),
                       ("    ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "    shadow = copy.deepcopy(model)\n"
                        "    ema = dict(shadow.named_parameters())")),
         mistake="10.attach_weight_ema.start-requires-grad",
         expect=["requires grad", "detach().clone()"]),
    dict(exercise="attach_weight_ema", kind="right", why="a deep copy with requires_grad_(False), as timm does",
         source="""
import copy
import torch


def attach_weight_ema(model, optimizer, decay):
    shadow = copy.deepcopy(model).requires_grad_(False)
    ema = dict(shadow.named_parameters())

    @torch.no_grad()
    def update(opt, args, kwargs):
        for name, p in model.named_parameters():
            ema[name].mul_(decay).add_(p, alpha=1 - decay)

    return ema, optimizer.register_step_post_hook(update)
""",
         expect=[]),
    dict(exercise="attach_weight_ema", kind="wrong", why="the hook takes the optimizer only",
         clause="post-hook",
         source=edited(reference("attach_weight_ema"),
                       ("def update(optimizer, args, kwargs):", "def update(optimizer):")),
         mistake="10.attach_weight_ema.wrong-hook-signature",
         expect=["takes 1 positional argument but 3 were given"]),

    dict(exercise="migrate_checkpoint_keys", kind="right",
         why="no startswith test: a child's hook gets only the keys under its prefix",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("        for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "        for key in list(state_dict):\n"
                        "            local = key[len(prefix):]\n"
                        "            if local in renames:\n"
                        "                state_dict[prefix + renames[local]] = state_dict.pop(key)")),
         expect=[]),
    dict(exercise="attach_weight_ema", kind="wrong", why="copy_ of an expression that needs grad",
         clause="no-autograd",
         source=edited(reference("attach_weight_ema"),
                       ("    @torch.no_grad()\n", ""),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "ema[name].copy_(decay * ema[name] + (1 - decay) * parameter)")),
         mistake="10.attach_weight_ema.update-keeps-graph",
         expect=["requires grad", "copybackwards", "torch.no_grad()"]),
    # ---- unknown keys kept, a prefix cut with lstrip, a module-level ema, a tied weight updated twice
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="also drops the module's keys it does not know",
         clause="others-alone",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "state_dict[prefix + new] = state_dict.pop(prefix + old)\n"
                        "        known = {prefix + key for key in module.state_dict()}\n"
                        "        for key in list(state_dict):\n"
                        "            if key.startswith(prefix) and key not in known:\n"
                        "                del state_dict[key]  # stale entries of old checkpoints")),
         mistake="10.migrate_checkpoint_keys.removes-other-keys",
         expect=["expected only", "stale_scale", "also the ones the module does not know"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="cuts the prefix off with str.lstrip",
         clause="prefix",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "for key in list(state_dict):\n"
                        "            local = key.lstrip(prefix)\n"
                        "            if local in renames:\n"
                        "                state_dict[prefix + renames[local]] = state_dict.pop(key)")),
         mistake="10.migrate_checkpoint_keys.lstrip-prefix",
         expect=["str.lstrip", "any of its characters", "key[len(prefix):]"]),
    dict(exercise="migrate_checkpoint_keys", kind="right", why="functools.partial of a module-level function",
         source='''
import functools


def _move(renames, module, state_dict, prefix, *rest):
    for old, new in renames.items():
        if prefix + old in state_dict:
            state_dict[prefix + new] = state_dict.pop(prefix + old)


def migrate_checkpoint_keys(module, renames):
    return module.register_load_state_dict_pre_hook(functools.partial(_move, dict(renames)))
''',
         expect=[]),
    dict(exercise="attach_weight_ema", kind="wrong", why="one ema dict at module level, refilled by each call",
         clause="own-dict",
         source=edited(reference("attach_weight_ema"),
                       ("import torch", "import torch\n\nEMA = {}"),
                       ("    ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}",
                        "    EMA.clear()\n"
                        "    EMA.update({name: parameter.detach().clone() for name, parameter in parameters.items()})"),
                       ("ema[name].mul_(decay)", "EMA[name].mul_(decay)"),
                       ("return ema, optimizer", "return EMA, optimizer")),
         mistake="10.attach_weight_ema.shared-ema-dict",
         expect=["second attach_weight_ema", "changed the first ema", "not one kept at module level"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="each module's own parameters: a tied one updated twice",
         clause="tied-once",
         source=edited(reference("attach_weight_ema"),
                       ("    parameters = dict(model.named_parameters())",
                        "    names = {id(p): name for name, p in model.named_parameters()}\n"
                        "    parameters = dict(model.named_parameters())"),
                       ("        for name, parameter in parameters.items():\n"
                        "            ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        "        for module in model.modules():\n"
                        "            for parameter in module.parameters(recurse=False):\n"
                        "                ema[names[id(parameter)]].mul_(decay).add_(parameter, alpha=1 - decay)")),
         mistake="10.attach_weight_ema.updates-tied-twice",
         expect=["updated twice in one step", "tied parameter", "update each entry once"]),
    dict(exercise="attach_weight_ema", kind="right", why="torch._foreach_lerp_ over the entries",
         source='''
import torch


def attach_weight_ema(model, optimizer, decay):
    names, parameters = zip(*model.named_parameters())
    ema = {name: torch.clone(p.detach()) for name, p in zip(names, parameters)}
    averages = [ema[name] for name in names]

    def update(optimizer, args, kwargs):
        with torch.no_grad():
            torch._foreach_lerp_(averages, [p.detach() for p in parameters], 1 - decay)

    return ema, optimizer.register_step_post_hook(update)
''',
         expect=[]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="cuts one character too many after the prefix",
         clause="prefix",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("for old, new in renames.items():\n"
                        "            if prefix + old in state_dict:\n"
                        "                state_dict[prefix + new] = state_dict.pop(prefix + old)",
                        "for key in list(state_dict):\n"
                        "            local = key[len(prefix) + 1:] if prefix else key  # prefix, then its dot\n"
                        "            if key.startswith(prefix) and local in renames:\n"
                        "                state_dict[prefix + renames[local]] = state_dict.pop(key)")),
         mistake="10.migrate_checkpoint_keys.ignores-prefix",
         expect=["loaded inside a bigger model", "ends with its dot", "key[len(prefix):]"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="wraps optimizer.step instead of a step post-hook",
         clause="post-hook",
         source='''
import torch


def attach_weight_ema(model, optimizer, decay):
    parameters = dict(model.named_parameters())
    ema = {name: p.detach().clone() for name, p in parameters.items()}
    original_step = optimizer.step

    def step(*args, **kwargs):
        result = original_step(*args, **kwargs)
        with torch.no_grad():
            for name, p in parameters.items():
                ema[name].mul_(decay).add_(p, alpha=1 - decay)
        return result

    optimizer.step = step

    class Handle:
        def remove(self):
            optimizer.step = original_step

    return ema, Handle()
''',
         mistake="10.attach_weight_ema.wraps-step",
         expect=["not that of a step post-hook", "optimizer.step was replaced", "register_step_post_hook"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="keeps ema and decay as attributes of the optimizer",
         clause="own-dict",
         source='''
import torch


def attach_weight_ema(model, optimizer, decay):
    optimizer.ema_parameters = dict(model.named_parameters())
    optimizer.ema = {name: p.detach().clone() for name, p in optimizer.ema_parameters.items()}
    optimizer.ema_decay = decay

    @torch.no_grad()
    def update(opt, args, kwargs):
        for name, p in opt.ema_parameters.items():
            opt.ema[name].mul_(opt.ema_decay).add_(p, alpha=1 - opt.ema_decay)

    return optimizer.ema, optimizer.register_step_post_hook(update)
''',
         mistake="10.attach_weight_ema.shared-decay",
         expect=["on the same model and optimizer", "with its own decay", "an attribute of the optimizer"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="decay kept in a global",
         clause="own-dict",
         source=edited(reference("attach_weight_ema"),
                       ("import torch", 'import torch\n\nSETTINGS = {"decay": 0.0}'),
                       ("    parameters = dict(model.named_parameters())",
                        '    SETTINGS["decay"] = decay\n'
                        "    parameters = dict(model.named_parameters())"),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)",
                        'ema[name].mul_(SETTINGS["decay"]).add_(parameter, alpha=1 - SETTINGS["decay"])')),
         mistake="10.attach_weight_ema.shared-decay",
         expect=["one optimizer step moved the first average", "its own decay, 0.9", "not in a global"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="keeps renames as an attribute of the module",
         clause="own-hook",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("    def rename(", "    module.checkpoint_renames = dict(renames)\n\n    def rename("),
                       ("for old, new in renames.items():", "for old, new in module.checkpoint_renames.items():")),
         mistake="10.migrate_checkpoint_keys.renames-shared-between-calls",
         expect=["on the same module", "the first call's renames were not applied", "do not keep them on the module"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="a second call replaces the first call's hook",
         clause="own-hook",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("def migrate_checkpoint_keys(module, renames):",
                        "_HANDLES = {}\n"
                        "\n"
                        "\n"
                        "def migrate_checkpoint_keys(module, renames):"),
                       ("    def rename(",
                        "    if module in _HANDLES:  # as a re-run cell would stack hooks, keep one per module\n"
                        "        _HANDLES[module].remove()\n"
                        "\n"
                        "    def rename("),
                       ("    return module.register_load_state_dict_pre_hook(rename)",
                        "    _HANDLES[module] = module.register_load_state_dict_pre_hook(rename)\n"
                        "    return _HANDLES[module]")),
         mistake="10.migrate_checkpoint_keys.renames-shared-between-calls",
         expect=["the first call's renames were not applied", "do not remove or replace the hook of an earlier call"]),
]


CLAUSES = {
    "migrate_checkpoint_keys": {
        "renames": "`renames` maps old keys to new keys, both local to `module`",
        "pre-hook": "Registers a load_state_dict pre-hook on `module`",
        "each-load": "each time `module` is loaded",
        "prefix": "(alone, or inside a bigger model at some `prefix`)",
        "moves": "moves every present `prefix + old` key of the state dict to `prefix + new`",
        "in-place": "editing the dict in place",
        "old-removed": "the old key is removed",
        "both-keys": "When the dict holds both keys, the old key's value replaces the new key's",
        "absent-skipped": "Absent old keys are skipped",
        "others-alone": "other keys are left alone",
        "own-hook": "Each call registers a hook of its own",
        "handle": "Returns the RemovableHandle of the hook",
    },
    "attach_weight_ema": {
        "returns-pair": "Returns `(ema, handle)`",
        "keys": "`ema` maps each name of `model.named_parameters()`",
        "frozen-keys": "frozen ones included",
        "no-buffers": "buffers not",
        "tied-once": "a tied parameter once",
        "copy": "starts as a copy of the parameter's value",
        "no-grad-start": "(no grad)",
        "post-hook": "A step post-hook registered on `optimizer`",
        "handle": "(whose handle is `handle`)",
        "every-entry": "updates every entry after each `optimizer.step()`",
        "no-grad-params": "also those of parameters that got no gradient or are in no parameter group",
        "formula": "ema = decay * ema + (1 - decay) * parameter",
        "after-step": "(its value after the step)",
        "no-autograd": "without autograd",
        "params-unchanged": "leaving the parameters unchanged",
        "any-optimizer": "It works for any `torch.optim.Optimizer`",
        "all-groups": "with all of its parameter groups",
        "own-dict": "Each call makes an `ema` of its own",
    },
}

NOT_CLAUSES = {
    "migrate_checkpoint_keys": {
        "Let checkpoints that use old key names load into `module`.":
            "the summary line; the clauses below say how",
    },
    "attach_weight_ema": {
        "Keep an exponential moving average of the parameters of `model`.":
            "the summary line; the clauses below say what the average is and when it moves",
    },
}
# Named mistakes that no entry above produced: one entry each, written as the reference with one change.
_MOVE = "                state_dict[prefix + new] = state_dict.pop(prefix + old)"
_REGISTER = "    return module.register_load_state_dict_pre_hook(rename)"
_EMA_RETURN = "    return ema, optimizer.register_step_post_hook(update)"
ENTRIES += [
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="returns the handle in a list", clause="handle",
         source=edited(reference("migrate_checkpoint_keys"),
                       (_REGISTER, "    return [module.register_load_state_dict_pre_hook(rename)]")),
         mistake="10.migrate_checkpoint_keys.handle-in-a-list",
         expect=["not in a list"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="registers the hook twice", clause="handle",
         source=edited(reference("migrate_checkpoint_keys"),
                       (_REGISTER, "    module.register_load_state_dict_pre_hook(rename)\n" + _REGISTER)),
         mistake="10.migrate_checkpoint_keys.hook-left-registered",
         expect=["after handle.remove(), the module still has a load_state_dict pre-hook"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="also renames in a wrapper of module.load_state_dict",
         clause="handle",
         source=edited(reference("migrate_checkpoint_keys"),
                       (_REGISTER,
                        "    original = module.load_state_dict\n\n"
                        "    def load_state_dict(state_dict, strict=True, assign=False):\n"
                        "        state_dict = dict(state_dict)\n"
                        "        rename(module, state_dict, '', None, strict, [], [], [])\n"
                        "        return original(state_dict, strict, assign)\n\n"
                        "    module.load_state_dict = load_state_dict\n" + _REGISTER)),
         mistake="10.migrate_checkpoint_keys.renames-outside-hook",
         expect=["still found every key", "something other than the returned handle's hook"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="renames new keys back to old ones too",
         clause="others-alone",
         source=edited(reference("migrate_checkpoint_keys"),
                       (_MOVE, _MOVE + "\n            elif prefix + new in state_dict:\n"
                                       "                state_dict[prefix + old] = state_dict.pop(prefix + new)")),
         mistake="10.migrate_checkpoint_keys.breaks-new-checkpoint",
         expect=["with the new names only", "skip the renames whose old key is not in the dict"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="reports a rename under neither name as missing",
         clause="absent-skipped",
         source=edited(reference("migrate_checkpoint_keys"),
                       (_MOVE, _MOVE + "\n            elif prefix + new not in state_dict:\n"
                                       "                missing_keys.append(prefix + new)")),
         mistake="10.migrate_checkpoint_keys.mishandles-absent-key",
         expect=["under neither name", "add no key for them"]),
    dict(exercise="migrate_checkpoint_keys", kind="wrong", why="pops the old keys into a new dict it returns",
         clause="in-place",
         source=edited(reference("migrate_checkpoint_keys"),
                       ("        for old, new in renames.items():", "        renamed = {}\n        for old, new in renames.items():"),
                       (_MOVE, "                renamed[prefix + new] = state_dict.pop(prefix + old)\n"
                               "        return renamed")),
         mistake="10.migrate_checkpoint_keys.wrong-keys-after-load",
         expect=["every old key prefix + old must be at prefix + new"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="returns the averages as a list", clause="returns-pair",
         source=edited(reference("attach_weight_ema"), ("return ema, optimizer", "return list(ema.values()), optimizer")),
         mistake="10.attach_weight_ema.ema-not-a-dict",
         expect=["as ema; expected a dict from parameter name to tensor"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="NumPy copies of the parameters", clause="copy",
         source=edited(reference("attach_weight_ema"),
                       ("parameter.detach().clone() for", "parameter.detach().numpy().copy() for")),
         mistake="10.attach_weight_ema.entry-not-a-tensor",
         expect=["expected a tensor"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="copies the parameter at each step", clause="formula",
         source=edited(reference("attach_weight_ema"),
                       ("ema[name].mul_(decay).add_(parameter, alpha=1 - decay)", "ema[name].copy_(parameter)")),
         mistake="10.attach_weight_ema.follows-parameter",
         expect=["it follows the parameter instead of averaging"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="returns the handle of a second hook", clause="handle",
         source=edited(reference("attach_weight_ema"),
                       (_EMA_RETURN, "    optimizer.register_step_post_hook(update)\n"
                                     "    return ema, optimizer.register_step_post_hook(lambda optimizer, args, kwargs: None)")),
         mistake="10.attach_weight_ema.handle-not-of-hook",
         expect=["handle.remove(), an optimizer step still changed ema"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="returns the average already attached to the model",
         clause="own-dict",
         source=edited(reference("attach_weight_ema"),
                       ("def attach_weight_ema(", "_ATTACHED = {}\n\n\ndef attach_weight_ema("),
                       ("    parameters = dict(model.named_parameters())",
                        "    if model in _ATTACHED:\n        return _ATTACHED[model]\n"
                        "    parameters = dict(model.named_parameters())"),
                       (_EMA_RETURN, "    _ATTACHED[model] = ema, optimizer.register_step_post_hook(update)\n"
                                     "    return _ATTACHED[model]")),
         mistake="10.attach_weight_ema.second-call-not-own-pair",
         expect=["expected its own (ema, handle) pair, with a new dict"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="the optimizer's parameters and the frozen ones", clause="keys",
         source=edited(reference("attach_weight_ema"),
                       ("    parameters = dict(model.named_parameters())",
                        "    in_optimizer = {id(p) for group in optimizer.param_groups for p in group['params']}\n"
                        "    parameters = {name: p for name, p in model.named_parameters()\n"
                        "                  if id(p) in in_optimizer or not p.requires_grad}")),
         mistake="10.attach_weight_ema.skips-params-outside-optimizer",
         expect=["in no parameter group of the optimizer"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="forgets the 1 - decay weight", clause="formula",
         source=edited(reference("attach_weight_ema"), ("add_(parameter, alpha=1 - decay)", "add_(parameter)")),
         mistake="10.attach_weight_ema.wrong-ema-value",
         expect=["expected decay * ema + (1 - decay) * parameter"]),
    dict(exercise="attach_weight_ema", kind="wrong", why="keeps an update counter in ema", clause="keys",
         source=edited(reference("attach_weight_ema"),
                       ("    @torch.no_grad()", "    ema['num_updates'] = torch.zeros(())\n\n    @torch.no_grad()")),
         mistake="10.attach_weight_ema.wrong-keys",
         expect=["expected the names of model.named_parameters()"]),
]
