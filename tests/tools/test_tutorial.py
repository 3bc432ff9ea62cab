"""The tutorials' shared command line and ratio text (``tesched/tools/tutorial.py``)."""
import pytest

from tesched.tools.tutorial import parse_tutorial_args, ratio_text, tutorial_parser

DOC = """Tutorial 0: a title.

Run it:  python tutorials/00.py --quick

More text.
"""


def test_quick_comes_from_the_flag_or_the_environment(monkeypatch):
    monkeypatch.delenv("TESCHED_QUICK", raising=False)
    parser = tutorial_parser(DOC, "tiny sizes")
    assert parse_tutorial_args(parser, ["--quick"]).quick
    assert not parse_tutorial_args(parser, []).quick
    monkeypatch.setenv("TESCHED_QUICK", "1")
    assert parse_tutorial_args(parser, []).quick


def test_help_shows_the_title_and_a_typo_is_an_error(capsys):
    parser = tutorial_parser(DOC, "tiny sizes")
    assert "Tutorial 0: a title." in parser.format_help() and "tiny sizes" in parser.format_help()
    with pytest.raises(SystemExit) as exit_info:
        parse_tutorial_args(parser, ["--quik"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --quik" in capsys.readouterr().err


def test_a_ratio_of_noisy_timings_is_a_hint_not_a_number():
    assert ratio_text(2.0, 1.0, 0.1, 0.1) == "2.00x"
    assert "busy" in ratio_text(2.0, 1.0, 1.5, 0.1)
    assert "busy" in ratio_text(0.0, 1.0)
