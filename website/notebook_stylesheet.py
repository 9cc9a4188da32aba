"""The notebook stylesheet cut to what the pages use.

mkdocs-jupyter's stylesheet is all of JupyterLab's (575 KB: its file browser, dialogs, menus,
Blueprint widgets, hundreds of colour variables); the site's pages show cells and their outputs.
`trimmed(css, pages, scripts)` keeps a rule's selector only when every class and id it names
(outside :not(), :is() and the like) is on one of the pages or may be given by a script (a word
of its text: Material wraps each table in .md-typeset__scrollwrap), and a custom property only
when something kept uses it (var(--name), here or in `pages`); at-rules other than @media and
@supports stay."""

import re

import tinycss2  # comes with nbconvert (bleach[css]), which mkdocs-jupyter needs

_ATTRIBUTE = re.compile(r'\b(class|id)="([^"]*)"')
_VAR = re.compile(r"var\(\s*(--[\w-]+)")
_WORD = re.compile(r"-?[_a-zA-Z][\w-]*")
_NESTED = {"media", "supports"}  # at-rules that hold rules: trimmed like the stylesheet


def names_on(html):
    """({'.class', ...} | {'#id', ...}) of an HTML text."""
    names = set()
    for attribute, value in _ATTRIBUTE.findall(html):
        names.update(("." if attribute == "class" else "#") + name for name in value.split())
    return names


def _selectors(prelude):
    """A rule's prelude split at its top-level commas, each a list of tokens."""
    selectors = [[]]
    for token in prelude:
        if token.type == "literal" and token.value == ",":
            selectors.append([])
        else:
            selectors[-1].append(token)
    return selectors


def _required(selector):
    """The classes and ids a selector needs ({'.jp-Cell', '#top'}), functional pseudo-classes'
    arguments left out (`:not(.jp-mod-active)` needs nothing)."""
    needed, after_dot = set(), False
    for token in selector:
        if token.type == "ident" and after_dot:
            needed.add("." + token.value)
        elif token.type == "hash" and token.is_identifier:
            needed.add("#" + token.value)
        after_dot = token.type == "literal" and token.value == "."
    return needed


def _rules(nodes, names):
    """[(selector text, [declarations]) or (at-rule head, [nested]) or (raw text,)] of the kept rules."""
    kept = []
    for node in nodes:
        if node.type == "qualified-rule":
            selectors = [tinycss2.serialize(selector).strip() for selector in _selectors(node.prelude)
                         if _required(selector) <= names]
            if selectors:
                declarations = [item for item in tinycss2.parse_declaration_list(
                    node.content, skip_comments=True, skip_whitespace=True) if item.type == "declaration"]
                kept.append((",".join(selectors), declarations))
        elif node.type == "at-rule" and node.lower_at_keyword in _NESTED and node.content is not None:
            inner = _rules(tinycss2.parse_rule_list(node.content, skip_comments=True, skip_whitespace=True), names)
            if inner:
                kept.append((f"@{node.at_keyword}{tinycss2.serialize(node.prelude).rstrip()}", inner))
        elif node.type == "at-rule":
            kept.append((node.serialize(),))
    return kept


def _declaration(item):
    value = tinycss2.serialize(item.value).strip()
    return f"{item.name}:{value}{'!important' if item.important else ''}"


def _walk(rules):
    """Every declaration of the kept rules, and the raw at-rules' text."""
    for rule in rules:
        if len(rule) == 1:
            yield rule[0]
        elif rule[0].startswith("@"):
            yield from _walk(rule[1])
        else:
            yield from rule[1]


def _used_properties(rules, pages):
    """The custom properties that a kept declaration, a raw at-rule or a page uses, and those
    that the values of these use in turn."""
    values = {}
    used = set()
    for item in _walk(rules):
        if isinstance(item, str):
            used.update(_VAR.findall(item))
        elif item.name.startswith("--"):
            values.setdefault(item.name, []).append(tinycss2.serialize(item.value))
        else:
            used.update(_VAR.findall(tinycss2.serialize(item.value)))
    for page in pages:
        used.update(_VAR.findall(page))
    todo = list(used)
    while todo:
        for value in values.get(todo.pop(), []):
            new = set(_VAR.findall(value)) - used
            used |= new
            todo += new
    return used


def _text(rules, used):
    out = []
    for rule in rules:
        if len(rule) == 1:
            out.append(rule[0])
        elif rule[0].startswith("@"):
            out.append(f"{rule[0]}{{{_text(rule[1], used)}}}")
        else:
            kept = [_declaration(item) for item in rule[1] if not item.name.startswith("--") or item.name in used]
            if kept:
                out.append(f"{rule[0]}{{{';'.join(kept)}}}")
    return "\n".join(out)


def trimmed(css, pages, scripts=()):
    """`css` without the rules and custom properties that none of `pages` (HTML texts, and
    other stylesheets that may use its properties) can use, even after `scripts` (JavaScript
    texts) changed them."""
    names = set().union(*(names_on(page) for page in pages))
    names |= {prefix + word for script in scripts for word in set(_WORD.findall(script)) for prefix in ".#"}
    rules = _rules(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True), names)
    return _text(rules, _used_properties(rules, pages)) + "\n"
