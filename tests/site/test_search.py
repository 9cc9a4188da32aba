"""Search in the browser: the lesson that teaches a hook API comes first for the API's name,
above the pages that only name it (home's lessons table, the cheat sheet, other lessons); a
query that names no API finds what it did (website/hooks.py gives each lesson's search entry
the APIs it teaches as keywords)."""

import json

import pytest

# Each result's page and section, in the order shown.
RESULTS = """() => Array.from(document.querySelectorAll('.md-search-result__item > a'))
    .map(link => new URL(link.href).pathname + new URL(link.href).hash)"""


def _settled_results(page):
    """The results once they stop changing: they follow the typing, and a list that lags shows
    the results of a shorter query."""
    results, same = None, 0
    for _ in range(50):
        page.wait_for_timeout(100)
        now = page.evaluate(RESULTS)
        same = same + 1 if now == results and now else 0
        results = now
        if same >= 5:
            break
    return results


def _search(visit, query):
    page = visit.open("", every_cell=False)
    field = page.locator(".md-search__input")
    field.click()
    field.press_sequentially(query, delay=10)  # as a person types
    page.locator(".md-search-result__item").first.wait_for(timeout=15000)
    results = _settled_results(page)
    assert results, f"no results for {query!r}"
    return results


@pytest.mark.parametrize("query, lesson", [
    ("register_full_backward_hook", "05_backward_hooks"),  # was 4th, after the cheat sheet, home and lesson 02
    ("comm hook", "13_distributed_hooks"),  # was 3rd, after home's "The hooked command" and lesson 07
    ("register_forward_pre_hook", "03_forward_pre_hooks"),
    ("register_post_accumulate_grad_hook", "08_autograd_hooks"),
    ("register_comm_hook", "13_distributed_hooks"),
])
def test_the_lesson_that_teaches_an_api_comes_first(visit, query, lesson):
    results = _search(visit, query)
    pages = list(dict.fromkeys(link.split("#")[0] for link in results))  # each page once, in order
    assert pages[0].endswith(f"/lessons/{lesson}/"), f"{query!r}: the first pages are {pages[:4]}"
    visit.check()


@pytest.mark.parametrize("query", ["hooked status", "hooked hint"])
def test_a_query_that_names_no_api_finds_the_home_page_first(visit, base_url, query):
    """The hooked command is the home page's (README's) section: no lesson's keywords outrank it
    (a weight on whole lesson pages put lesson 01 first)."""
    results = _search(visit, query)
    home = "/" + base_url.split("/", 3)[3]
    assert results[0].split("#")[0] == home, f"{query!r}: the first results are {results[:4]}"
    visit.check()


def test_a_lessons_keywords_are_the_hook_apis_it_teaches(hooks, site_dir):
    """Only each lesson's own entry carries keywords; the cheat sheet's rows and README's lessons
    table say which APIs a lesson teaches."""
    docs = json.loads((site_dir / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    tagged = {doc["location"]: doc["tags"] for doc in docs if doc.get("tags")}
    assert set(tagged) == {f"lessons/{name}/" for name, apis in hooks.taught_apis().items() if apis}
    assert "register_comm_hook" in tagged["lessons/13_distributed_hooks/"]
    assert "register_full_backward_hook" in tagged["lessons/05_backward_hooks/"]
