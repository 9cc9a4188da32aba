"""What a function that registers hooks hands back so that its caller can remove them: one
handle, or a list of handles. `one` and `many` say, in the lesson's words, what was expected
("the RemovableHandle that register_forward_hook returned", and its plural)."""

from collections.abc import Iterator, Mapping

import torch
from torch.utils.hooks import RemovableHandle

from hooked.checks.check_api import calling, fail
from hooked.checks.tensors import describe

# The named mistakes single_handle, handle_list and check_handles_registered recognize, for the
# check_of of an exercise that hands back handles.
MISTAKES = {
    "handle-in-a-list": "returns the one handle inside a list or tuple",
    "no-handle": "returns something other than a handle (an object with remove())",
    "not-a-removable-handle": "returns an object of its own with remove() instead of torch's RemovableHandle",
    "handles-not-a-list": "returns the handles as something other than a list",
    "handles-as-dict": "returns the handles as a dict, whose iteration gives its keys",
    "handles-as-generator": "returns a generator of registrations, which registers nothing until read",
    "not-handles": "returns a list holding something other than handles",
    "stale-handles": "returns handles kept between calls (a module-level list or a default argument)",
}


def is_handle(value):
    """A RemovableHandle or an object like it: it has a remove() method, and is not a list, tuple or
    dict (a list has a remove() method too, which takes an argument)."""
    return hasattr(value, "remove") and not isinstance(value, (list, tuple, dict))


def single_handle(handle, call_text, one, removable_handle=False, returned_as=""):
    """The one handle `call_text` returned (`returned_as`: which part of what it returned, "handle");
    with `removable_handle`, it must be a RemovableHandle itself, not an object of the learner's own
    with a remove() method."""
    returned = f"{call_text} returned {describe(handle)}" + (f" as {returned_as}" if returned_as else "")
    if isinstance(handle, (list, tuple)) and any(is_handle(item) for item in handle):
        fail(f"{returned}; expected {one}, itself (not in a list).", "handle-in-a-list")
    if not is_handle(handle):
        fail(f"{returned}; expected {one}, so that the caller can remove the hook.", "no-handle")
    if removable_handle and not isinstance(handle, RemovableHandle):
        fail(f"{returned}, an object with a remove() method; expected {one}, itself.", "not-a-removable-handle")
    return handle


def handle_list(handles, call_text, one, many, plain_list=False, iterator_allowed=False):
    """The handles `call_text` returned, as a list. `plain_list`: only a list will do (not a tuple);
    `iterator_allowed`: a generator is read here (its registrations run now), not refused."""
    if plain_list and not isinstance(handles, list):
        fail(f"{call_text} returned {describe(handles)} as the handles; expected a list of {many} (a plain list, "
             "which the caller can loop over to remove them).", "handles-not-a-list")
    if isinstance(handles, Mapping):
        fail(f"{call_text} returned {describe(handles)} as its handles, a dict (read as a sequence, a dict gives "
             f"its keys); expected a list of {many}: return list(....values()), or build a list.", "handles-as-dict")
    if isinstance(handles, (str, bytes, torch.Tensor)) or not hasattr(handles, "__iter__"):
        fail(f"{call_text} returned {describe(handles)} as its handles; expected a list of {many}.", "handles-not-a-list")
    if isinstance(handles, Iterator) and not iterator_allowed:
        fail(f"{call_text} returned {describe(handles)} as its handles, an iterator (a generator expression, "
             f"map(...)); expected a list of {many}. A generator registers nothing until it is read: the "
             "registrations inside it run only when something iterates over it, so the call itself registered no "
             "hook. Return a list of the handles: build a list, [... for ...] or list(map(...)).", "handles-as-generator")
    handles = list(handles)
    for handle in handles:
        if not is_handle(handle):
            fail(f"{call_text} returned handles {describe(handles)}, holding {describe(handle)}; each must be {one} "
                 "(an object with a remove() method).", "not-handles")
    return handles


def check_handles_registered(handles, call_text):
    """Each RemovableHandle returned must be of a hook that is registered now: a list kept between calls
    (at module level, or a default argument) also holds the handles of earlier calls, whose hooks the
    checker has removed."""
    stale = 0
    for handle in handles:
        reference = getattr(handle, "hooks_dict_ref", None)
        if not callable(reference):
            continue  # not a RemovableHandle; judged by what remove() does
        hooks = reference()
        if hooks is None or getattr(handle, "id", None) not in hooks:
            stale += 1
    if stale:
        fail(f"{call_text} returned {len(handles)} handles, {stale} of them of hooks that are no longer registered "
             "(hooks of an earlier call, which the checker removed, or hooks already removed). A list kept between "
             "calls, at module level or as a default argument such as handles=[], collects the handles of every "
             "call: make a new list in each call, holding the handles of this call's hooks only.", "stale-handles")


def remove_handles(handles, doing):
    """Call remove() on each of the learner's handles; `doing` says so in the message if one raises."""
    with calling(doing):
        for handle in handles:
            handle.remove()
