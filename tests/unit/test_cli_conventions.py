"""Conventions a command-line user already has: shell completion generated from the parser
(run through bash's own completion machinery), a verb's bad flag answered with that verb's usage,
`parse --summary` for "why doesn't my metric show up?", an empty file called empty."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from exporter.cli import build_parser
from exporter.demo import SCENARIOS
from tests.conftest import rl_exporter_cmd

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def cli(*args, timeout=60):
    return subprocess.run(rl_exporter_cmd(*args), cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


def bash_complete(script: Path, *words: str) -> list[str]:
    """What bash's completion function offers for the command line `words` (the last one is
    the word being completed), after `complete` registered it as bash-completion would."""
    line = " ".join(f"'{w}'" for w in words)
    prog = (f"source {script}\n"
            "complete -p rl-exporter >/dev/null || exit 3\n"
            f"COMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); COMPREPLY=()\n"
            "$(complete -p rl-exporter | sed -E 's/.* -F ([^ ]+) .*/\\1/')\n"
            'printf "%s\\n" "${COMPREPLY[@]}"\n')
    r = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory):
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    r = cli("completion", "bash")
    assert r.returncode == 0, r.stderr
    path = tmp_path_factory.mktemp("completion") / "rl-exporter.bash"
    path.write_text(r.stdout)
    return path


def test_bash_completes_verbs_flags_and_choices(bash_script):
    assert bash_complete(bash_script, "rl-exporter", "") == sorted(build_parser().verbs) + [
        "-h", "--help", "--version", "--log-level"]
    assert bash_complete(bash_script, "rl-exporter", "do") == ["doctor"]
    assert bash_complete(bash_script, "rl-exporter", "demo", "--scen") == ["--scenario"]
    assert bash_complete(bash_script, "rl-exporter", "demo", "--scenario", "") == sorted(SCENARIOS)
    assert bash_complete(bash_script, "rl-exporter", "demo", "--scenario", "rank-") == ["rank-straggler"]
    assert bash_complete(bash_script, "rl-exporter", "serve", "--gpu", "o") == ["on", "off"]
    assert "--summary" in bash_complete(bash_script, "rl-exporter", "parse", "--")
    assert bash_complete(bash_script, "rl-exporter", "completion", "") == ["bash", "zsh", "fish"]


def test_bash_completes_files_where_a_verb_takes_a_path(bash_script, tmp_path):
    (tmp_path / "train.log").write_text("")
    got = bash_complete(bash_script, "rl-exporter", "doctor", f"{tmp_path}/tr")
    assert got == [f"{tmp_path}/train.log"]


def test_zsh_and_fish_scripts_come_from_the_same_parser():
    zsh = cli("completion", "zsh").stdout
    assert "bashcompinit" in zsh and "complete -o filenames -o bashdefault -F _rl_exporter rl-exporter" in zsh
    fish = cli("completion", "fish").stdout
    verbs = build_parser().verbs
    for name in verbs:
        assert f"complete -c rl-exporter -n __fish_use_subcommand -a {name} " in fish
    assert "-n '__fish_seen_subcommand_from demo' -l scenario -x -a '" in fish
    line = next(x for x in fish.splitlines() if "-l scenario" in x)
    assert set(line.split(" -x -a '", 1)[1].split("'", 1)[0].split()) == set(SCENARIOS)


def test_a_verbs_bad_flag_gets_that_verbs_usage():
    r = cli("doctor", "--jsn", "x")
    assert r.returncode == 2
    assert r.stderr.startswith("usage: rl-exporter doctor ")
    assert "rl-exporter doctor: error: unrecognized arguments: --jsn" in r.stderr
    top = cli("--bogus")
    assert top.returncode == 2 and "rl-exporter: error: unrecognized arguments: --bogus" in top.stderr


def test_parse_summary_lists_only_what_did_not_map(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"step:{i} - actor/pg_loss:0.1 - critic/score/mean:0.5 - my/custom_key:{i}\n"
                           for i in range(1, 4)))
    r = cli("parse", "--summary", str(log))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{log}: 3 frames (verl_console 3); 3 keys, 2 mapped to catalog series, 1 did not:"
    assert len(lines) == 2 and lines[1].split()[:3] == ["my/custom_key", "3", "frames"]
    assert 'rl_unmapped_value{key="my/custom_key"}' in lines[1] and "FALLBACK" in lines[1]
    assert "actor/pg_loss" not in r.stdout
    j = cli("parse", "--summary", "--json", str(log))
    (doc,) = [json.loads(x) for x in j.stdout.splitlines()]
    assert doc["mapped"] == 2 and [u["key"] for u in doc["unmapped"]] == ["my/custom_key"]
    assert doc["unmapped"][0]["frames"] == 3 and doc["unmapped"][0]["series"]["fallback"]


@pytest.mark.parametrize("verb", ["parse", "doctor"])
def test_an_empty_file_is_called_empty(tmp_path, verb):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    r = cli(verb, str(empty))
    assert r.returncode == 1
    assert f"rl-exporter {verb}: {empty}: the file is empty" in r.stderr, r.stderr
    assert "no known metrics format" not in r.stderr
