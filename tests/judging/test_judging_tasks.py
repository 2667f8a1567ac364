"""Task definitions (argusic.core.tasks): loading, validation, merging, generation and drift."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from argusic.cli.main import app
from argusic.core import tasks as T
from argusic.core.tasks import TaskDefinitionError, load_task, task_for
from typer.testing import CliRunner

PACKAGE = Path(T.__file__).resolve().parent.parent


def test_prompts_are_the_committed_instructions_byte_for_byte() -> None:
    assert load_task("install_and_run").prompt.encode() == (PACKAGE / "external/instructions.md").read_bytes()
    assert load_task("repair").prompt.encode() == (PACKAGE / "repair/prompt.md").read_bytes()


def test_generate_check_passes_on_the_committed_files() -> None:
    assert T.drifted() == []
    result = CliRunner().invoke(app, ["tasks", "generate", "--check"])
    assert result.exit_code == 0, result.output


def test_generate_check_names_every_drifted_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = T.generate(tmp_path)
    assert {p.relative_to(tmp_path).as_posix() for p in written} == set(T.generated_files())
    assert T.drifted(tmp_path) == []
    (tmp_path / "external/instructions.md").write_text("edited by hand\n")
    (tmp_path / "judging/generated/repair.review.json").unlink()
    (tmp_path / "judging/generated/stale.scenario.json").write_text("{}")
    monkeypatch.setattr(T, "PACKAGE_DIR", tmp_path)
    result = CliRunner().invoke(app, ["tasks", "generate", "--check"])
    assert result.exit_code == 1
    for name in ("external/instructions.md", "judging/generated/repair.review.json", "stale.scenario.json"):
        assert name in result.output
    # generate repairs what was edited (the stale file stays named until removed by a person)
    assert CliRunner().invoke(app, ["tasks", "generate"]).exit_code == 0
    assert T.drifted(tmp_path) == ["judging/generated/stale.scenario.json"]


def test_purposes_map_to_kinds_and_refinements_merge() -> None:
    assert (
        task_for("board", "csvstats").task_id == task_for("verdict", "csvstats").task_id == "install_and_run"
    )
    assert task_for("repair", "repairkit").task_id == "repair"
    plain = task_for("board", "csvstats")
    assert plain.project_id is None and plain.version == "1" and plain.needles == ()
    assert plain.revision == load_task("install_and_run").revision and len(plain.revision) == 64
    refined = task_for("board", "weatherfetch")
    assert refined.project_id == "weatherfetch" and refined.version == "1/1"
    assert refined.revision != plain.revision
    assert refined.tool_order == ("read", "test", "exec", "report")  # replaced
    assert refined.artifacts[: len(plain.artifacts)] == plain.artifacts  # added to
    assert "out/forecast.json" in refined.artifacts
    assert {n.id for n in refined.needles} >= {"mock-started", "forecast-printed", "umbrella-true"}
    # a refinement of another kind is not merged
    assert task_for("repair", "weatherfetch").project_id is None
    with pytest.raises(TaskDefinitionError, match="purpose 'other'"):
        task_for("other", "x")
    with pytest.raises(TaskDefinitionError, match="unknown"):
        load_task("nope")


def test_revision_is_canonical_and_moves_with_content(tmp_path: Path) -> None:
    folder = tmp_path / "tasks"
    shutil.copytree(T.TASKS_DIR, folder)
    first = load_task("install_and_run", tasks_dir=folder)
    assert first.revision == load_task("install_and_run").revision
    path = folder / "install_and_run.toml"
    path.write_text(
        path.read_text().replace('tool_order = ["read", "exec", "report"]', 'tool_order = ["read"]')
    )
    assert load_task("install_and_run", tasks_dir=folder).revision != first.revision


KIND = """
version = "1"
description = "d"
prompt = "p"
{extra}
[review]
shows = ["needles"]
[[review.fields]]
name = "look"
kind = "integer"
minimum = 0
maximum = {look_max}
[[review.fields]]
name = "decision"
kind = "choice"
choices = ["promote", "reject"]
{judging}"""
JUDGING = """
[judging]
criteria = [{ id = "code_structure", question = "q?" }, { id = "logic_correctness", question = "q?" }]
prompt = "judge: {{CRITERIA}}"
"""


def _kind(tmp_path: Path, extra: str = "", look_max: int = 2, judging: str = JUDGING) -> Path:
    folder = tmp_path / "tasks"
    (folder / "projects").mkdir(parents=True, exist_ok=True)
    text = KIND.replace("{extra}", extra).replace("{look_max}", str(look_max)).replace("{judging}", judging)
    (folder / "install_and_run.toml").write_text(text)
    return folder


def test_judging_criteria_render_into_the_judge_prompt() -> None:
    task = load_task("repair")
    assert task.criteria == ("code_structure", "logic_correctness")
    assert "{{CRITERIA}}" not in task.judge_prompt()
    assert "- `logic_correctness` (0, 1 or 2):" in task.judge_prompt()
    generated = PACKAGE / "judging/generated/repair.judge.md"
    assert generated.read_text() == task.judge_prompt()
    assert task.definition()["judging"] == task.judging  # part of the revision


@pytest.mark.parametrize(
    ("judging", "words"),
    [
        ("", "judging: Field required"),
        (JUDGING.replace("judge: {{CRITERIA}}", "no placeholder"), "exactly once"),
        (JUDGING.replace('"code_structure"', '"logic_correctness"'), "an id is repeated"),
        (JUDGING.replace('"code_structure"', '"look"'), "judges never score"),
        (JUDGING.replace('"code_structure"', '"agent_logic"'), "judges never score"),
        (JUDGING.replace("criteria = [", 'criteria = [{ id = "x", question = "" }, '), "at least 1"),
    ],
)
def test_refused_judging_tables_name_the_field(tmp_path: Path, judging: str, words: str) -> None:
    with pytest.raises(TaskDefinitionError, match="judging") as err:
        load_task("install_and_run", tasks_dir=_kind(tmp_path, judging=judging))
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ('tool_order = ["read", "teleport"]', "tool_order.1", "'read'"),
        ('needles = [{id = "a", regex = "(unclosed", where = ["log"]}]', "needles.0", "does not compile"),
        ('needles = [{id = "a", text = "x", regex = "x", where = ["log"]}]', "needles.0", "exactly one"),
        ('needles = [{id = "a", text = "x", where = ["screen"]}]', "needles.0.where.0", "'log'"),
        ('needles = [{id = "a", text = "x", where = []}]', "needles.0.where", "at least 1"),
        ('needles = [{id = "A B", text = "x", where = ["log"]}]', "needles.0.id", "pattern"),
        ('artifacts = ["../secret.html"]', "(file)", "'..'"),
        ('artifacts = ["/etc/passwd"]', "(file)", "relative"),
        ("colour = 3", "colour", "Extra inputs"),
        (
            "needles = ["
            + ", ".join(f'{{id = "n{i}", text = "x", where = ["log"]}}' for i in range(65))
            + "]",
            "needles",
            "at most 64",
        ),
        (
            'needles = [{id = "a", text = "x", where = ["log"]}, {id = "a", text = "y", where = ["log"]}]',
            "(file)",
            "repeated: a",
        ),
    ],
)
def test_refused_definitions_name_the_file_and_field(
    tmp_path: Path, extra: str, field: str, words: str
) -> None:
    folder = _kind(tmp_path, extra)
    with pytest.raises(TaskDefinitionError) as err:
        load_task("install_and_run", tasks_dir=folder)
    message = str(err.value)
    assert str(folder / "install_and_run.toml") in message and f"{field}:" in message and words in message


def test_review_fields_keep_their_fixed_meaning(tmp_path: Path) -> None:
    with pytest.raises(TaskDefinitionError, match=r"review\.fields\.0: .*maximum must be 2"):
        load_task("install_and_run", tasks_dir=_kind(tmp_path, look_max=5))


def test_project_refinement_checks(tmp_path: Path) -> None:
    folder = _kind(tmp_path, 'needles = [{id = "a", text = "x", where = ["log"]}]')
    project = folder / "projects" / "demo.toml"
    project.write_text(
        'version = "2"\ntask = "install_and_run"\nneedles = [{id = "a", text = "y", where = ["log"]}]\n'
    )
    with pytest.raises(TaskDefinitionError, match="demo.toml: needles: ids repeat the kind's: a"):
        load_task("install_and_run", "demo", tasks_dir=folder)
    project.write_text('version = "2"\ntask = "install_and_run"\nprompt = "mine"\n')
    with pytest.raises(TaskDefinitionError, match="demo.toml: prompt: Extra inputs"):
        load_task("install_and_run", "demo", tasks_dir=folder)
    project.write_text(
        'version = "2"\ntask = "install_and_run"\nreplace = ["needles"]\n'
        'needles = [{id = "b", regex = "b+", where = ["report"]}]\ntool_order = []\n'
    )
    task = load_task("install_and_run", "demo", tasks_dir=folder)
    assert [n.id for n in task.needles] == ["b"] and task.tool_order == () and task.version == "1/2"
    with pytest.raises(TaskDefinitionError, match="not a project id"):
        load_task("install_and_run", "../x", tasks_dir=folder)


def test_hostile_task_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _kind(tmp_path)
    real = folder / "install_and_run.toml"
    link = tmp_path / "linked"
    link.mkdir()
    os.symlink(real, link / "install_and_run.toml")
    with pytest.raises(TaskDefinitionError, match="links are not followed"):
        load_task("install_and_run", tasks_dir=link)
    real.write_bytes(b'version = "1"\ndescription = "\xff"\n')
    with pytest.raises(TaskDefinitionError, match="not UTF-8"):
        load_task("install_and_run", tasks_dir=folder)
    monkeypatch.setattr(T, "MAX_FILE_BYTES", 10)
    with pytest.raises(TaskDefinitionError, match="over 10 bytes"):
        load_task("install_and_run", tasks_dir=folder)
    monkeypatch.undo()
    real.write_text("version = ")
    with pytest.raises(TaskDefinitionError, match="not TOML"):
        load_task("install_and_run", tasks_dir=folder)


def test_cli_list_and_show() -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["tasks", "list"])
    assert listed.exit_code == 0 and "install_and_run" in listed.output and "weatherfetch" in listed.output
    shown = runner.invoke(app, ["tasks", "show", "install_and_run", "--project", "weatherfetch"])
    assert shown.exit_code == 0 and '"mock-started"' in shown.output
    assert runner.invoke(app, ["tasks", "show", "nope"]).exit_code == 2
