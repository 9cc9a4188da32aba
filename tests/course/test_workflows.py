"""The GitHub workflows (.github/workflows/): actionlint finds nothing in them, with ShellCheck
looking at their `run:` scripts, and they do what the README says they do. actionlint and
ShellCheck come with the authors' install (requirements-dev.txt), so a missing one fails."""

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from hooked.course import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def _tool(name):
    """The command installed beside this Python (the virtual environment's bin), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), name)
    found = beside if os.path.isfile(beside) and os.access(beside, os.X_OK) else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: the course's own tests need the authors' install, "
                    "`pip install -r requirements-dev.txt`.")
    return found


def _actionlint(folder, *files):
    return subprocess.run([_tool("actionlint"), "-shellcheck", _tool("shellcheck"), "-oneline", *files],
                          cwd=folder, capture_output=True, text=True, timeout=120)


def _workflow(name):
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))


def test_actionlint_finds_nothing_in_the_workflows():
    files = sorted(str(path.relative_to(ROOT)) for path in [*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])
    assert {".github/workflows/pages.yml", ".github/workflows/tests.yml"} <= set(files)
    completed = _actionlint(ROOT, *files)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout == ""


def test_actionlint_as_run_here_does_report_broken_workflows(tmp_path):
    """The check above can fail: a wrong output name, a wrong input and an unquoted variable
    in a script are each reported."""
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    pages = (WORKFLOWS / "pages.yml").read_text(encoding="utf-8")
    tests = (WORKFLOWS / "tests.yml").read_text(encoding="utf-8")
    assert "outputs.base_url }}" in pages and "path: site" in pages and "run: bash .ci/run" in tests
    (folder / "pages.yml").write_text(pages.replace("outputs.base_url }}", "outputs.base_uri }}")
                                      .replace("path: site", "paths: site"), encoding="utf-8")
    (folder / "tests.yml").write_text(tests.replace("run: bash .ci/run", "run: cd $HOME/course; bash .ci/run"),
                                      encoding="utf-8")
    completed = _actionlint(tmp_path, ".github/workflows/pages.yml", ".github/workflows/tests.yml")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert 'property "base_uri" is not defined' in completed.stdout
    assert 'input "paths" is not defined in action "actions/upload-pages-artifact' in completed.stdout
    assert "SC2086" in completed.stdout


def test_the_tests_workflow_runs_what_ci_runs_on_push_and_pull_request():
    workflow = _workflow("tests.yml")
    events = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert "push" in events and "pull_request" in events
    steps = workflow["jobs"]["ci-run"]["steps"]
    assert [step["run"] for step in steps if step.get("run", "").startswith("bash")] == ["bash .ci/run"]
    python = next(step for step in steps if step.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["python-version"] == "3.11"


def test_the_tests_workflow_runs_the_course_on_each_supported_torch_from_the_cpu_index():
    job = _workflow("tests.yml")["jobs"]["torch-versions"]
    assert job["strategy"]["matrix"]["torch"] == ["2.13", "2.14", "2.15"]
    install = next(step for step in job["steps"] if "pip install" in step.get("run", ""))
    assert install["env"]["TORCH"] == "${{ matrix.torch }}"
    assert '"torch==$TORCH.*" --index-url https://download.pytorch.org/whl/cpu' in install["run"]
    assert "grep -v '^torch' requirements.txt" in install["run"]
    assert job["steps"][-1]["run"] == "bash .ci/test-on-this-torch"


def test_the_site_workflow_builds_from_a_checkout_and_deploys_to_pages_with_this_repositorys_addresses():
    workflow = _workflow("pages.yml")
    assert workflow[True]["push"]["branches"] == ["main"]
    assert workflow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert workflow["concurrency"] == {"group": "pages", "cancel-in-progress": False}
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    uses = [step.get("uses", "").split("@")[0] for step in build["steps"]]
    assert uses[0] == "actions/checkout"
    assert "actions/configure-pages" in uses and uses[-1] == "actions/upload-pages-artifact"
    built = next(step for step in build["steps"] if "mkdocs build" in step.get("run", ""))
    assert "--strict" in built["run"] and "--site-dir site" in built["run"]
    assert built["env"]["HOOKED_SITE_URL"] == "${{ steps.pages.outputs.base_url }}/"
    assert built["env"]["HOOKED_REPO_URL"] == "${{ github.server_url }}/${{ github.repository }}"
    assert build["steps"][-1]["with"]["path"] == "site"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]


def _readme_blocks(section, language):
    """The code blocks in `language` of the README's `### section`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"### {section}\n")
    end = text.find("\n## ", start)
    return re.findall(rf"```{language}\n(.*?)```", text[start:end], flags=re.DOTALL)


def test_the_readmes_job_array_examples_for_grading_a_class_pass_actionlint_and_shellcheck(tmp_path):
    (workflow,) = _readme_blocks("Grade a class", "yaml")
    assert "--shard" in workflow and "--merge" in workflow
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "grade.yml").write_text(workflow, encoding="utf-8")
    completed = _actionlint(tmp_path, ".github/workflows/grade.yml")
    assert completed.returncode == 0 and completed.stdout == "", completed.stdout + completed.stderr
    scripts = [block for block in _readme_blocks("Grade a class", "bash") if "--shard" in block or "--merge" in block]
    assert len(scripts) == 2, scripts
    for number, script in enumerate(scripts):
        path = tmp_path / f"slurm-{number}.sh"
        path.write_text(script if script.startswith("#!") else "#!/usr/bin/env bash\n" + script, encoding="utf-8")
        checked = subprocess.run([_tool("shellcheck"), str(path)], capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, checked.stdout + checked.stderr
