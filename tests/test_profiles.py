"""Issue #37: lexical methods do not fail silently on noisy text.

``profile="noisy"`` / ``--profile noisy`` sets ngram's and minhash's shingling and
threshold (neardup.profiles), parameters the user gives win over it, the run records
it. The default ``auto`` reads the first documents and takes ``noisy`` when they look
noisy (neardup.text.noise_signal), ``clean`` otherwise, on every front door that reads
documents, and says so; ``neardup dedup --profile clean`` hints at ``noisy`` on noisy
input; an unknown profile is a clear error on both interfaces.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import neardup
from neardup.cli import main
from neardup.errors import ParameterError
from neardup.profiles import NOISY, choose_profile, profile_settings
from neardup.text import ShingleConfig
from neardup.text.noise_signal import (BROKEN_TOKEN_SHARE, STUCK_PUNCTUATION_SHARE,
                                       SAMPLE_DOCS, broken_token_share, looks_noisy, noise_shares,
                                       stuck_punctuation_share)

CLEAN = [
    "The company said its quarterly profit rose on higher sales of paper products.",
    "Shares of the bank closed higher after it reported record earnings for the year.",
    "The central bank left interest rates unchanged at its monthly policy meeting.",
    "The company said its quarterly profit rose on higher sales of paper products today.",
]
# OCR-like damage: digits inside words, and Cyrillic look-alikes inside Latin words.
NOISY_TEXTS = [
    "Th3 c0mpany sa1d its quarter1y pr0fit r0se on h1gher sa1es of paper pr0ducts.",
    "Shаres оf the bаnk c1osed h1gher аfter it rep0rted rec0rd earn1ngs for the year.",
    "The centra1 bank 1eft interest rates unchanged at its m0nthly po1icy meet1ng.",
    "Tbe c0mpany sald its quarter1y prof1t rose 0n higher sa1es of paper pr0ducts.",
]

# Real OCR (Tesseract) damage: no digits inside words, but punctuation read between
# letters and wrong letters, as on multi-ocr's pages.
OCR_TEXTS = [
    "The company.said its quarterly profit rose on:higher sales of paper prodncts.",
    "Shares of the bank closed higher after it reported record,earnings for the year.",
    "Die Zentralbank ließ die Zinsen unverändert;sagte ein Sprecher nach der.Sitzung.",
    "Le conseil a décidé de:la hausse des taux lors de sa.réunion mensuelle.",
]
# Clean text that holds punctuation between letters without being noise.
CLEAN_WITH_MARKS = [
    "The U.S. and U.K. said, e.g. in talks, i.e. today, that 3.5 pct was don't-care.",
    "See https://www.example.com/a.html or write to info@example.org for the report.",
    "The file /etc/adduser.conf sets a=b; f(x).y and list[i].name are code.",
    "Die Lehrer:innen sagten z.B. und d.h. nichts; m.a.w. niets, sources.list.d",
    "Mail jwe@che.utexas.edu, options euser,ruser,suser and Acquire::http::Proxy.",
    "如果设置了 $MANPATH,manpath 只会显示其内容,并显示一条警告。",
    "Цены на нефть выросли в понедельник, сообщил министр: рост продолжится.",
    "Ο υπουργός είπε ότι οι τιμές αυξήθηκαν. Η αγορά έκλεισε ανοδικά!",
]


def _method_params(result) -> dict:
    return result.params["method"]


@pytest.mark.parametrize("method", sorted(NOISY))
def test_python_profile_sets_the_documented_parameters(method):
    result = neardup.dedup(CLEAN, method=method, profile="noisy")
    params = _method_params(result)
    assert params["threshold"] == NOISY[method]["threshold"] == 0.3
    assert params["shingle"] == {"unit": "char", "n": 5}
    assert result.params["profile"] == "noisy"
    default = neardup.dedup(CLEAN, method=method)
    assert _method_params(default)["shingle"] == {"unit": "word", "n": 3}
    assert _method_params(default)["threshold"] == 0.5
    assert default.params["profile"] == "clean"
    assert default.params["profile_auto"]["requested"] == "auto"


def test_python_parameters_given_win_over_the_profile():
    result = neardup.dedup(CLEAN, method="minhash", profile="noisy", threshold=0.6)
    assert _method_params(result)["threshold"] == 0.6
    assert _method_params(result)["shingle"] == {"unit": "char", "n": 5}
    result = neardup.dedup(CLEAN, method="ngram", profile="noisy",
                           shingle=ShingleConfig(unit="word", n=2))
    assert _method_params(result)["shingle"] == {"unit": "word", "n": 2}
    assert _method_params(result)["threshold"] == 0.3


def test_profile_settings_are_empty_for_clean_and_other_methods():
    assert profile_settings("clean", "minhash") == {}
    assert profile_settings("noisy", "exact") == {}
    with pytest.raises(ValueError, match="'clean', 'noisy'"):
        profile_settings("auto", "minhash")  # resolved first, by choose_profile


def test_choose_profile_reads_the_first_documents_only():
    assert choose_profile("auto", "minhash", NOISY_TEXTS).name == "noisy"
    assert choose_profile("auto", "minhash", OCR_TEXTS).name == "noisy"
    assert choose_profile("auto", "ngram", CLEAN + CLEAN_WITH_MARKS).name == "clean"
    # Noise after the sample is not read: the choice is the first documents'.
    late = choose_profile("auto", "minhash", CLEAN * (SAMPLE_DOCS // 4) + NOISY_TEXTS * 100)
    assert late.name == "clean" and late.sample_docs == SAMPLE_DOCS
    # A named profile, a method no profile changes, or no documents: nothing is read.
    for choice in (choose_profile("noisy", "minhash", CLEAN),
                   choose_profile("auto", "exact", NOISY_TEXTS),
                   choose_profile("auto", "minhash", None)):
        assert not choice.chosen and choice.describe() == ""
    assert choose_profile("auto", "exact", NOISY_TEXTS).name == "clean"
    record = choose_profile("auto", "minhash", NOISY_TEXTS).record()
    assert record["name"] == "noisy" and record["sample_docs"] == len(NOISY_TEXTS)
    assert record["broken_tokens"] > BROKEN_TOKEN_SHARE


def test_python_auto_reads_a_stream_once():
    # A generator of records is read once: the look at the first documents is the run's.
    records = ({"text": t} for t in NOISY_TEXTS + CLEAN)
    result = neardup.dedup(records, method="minhash")
    assert result.params["profile"] == "noisy"
    assert len(result.clusters) == len(NOISY_TEXTS) + len(CLEAN)


def test_unknown_profile_is_a_clear_error(tmp_path):
    with pytest.raises(ParameterError,
                       match="parameter 'profile' must be one of 'auto', 'clean', 'noisy'"):
        neardup.dedup(CLEAN, method="minhash", profile="ocr")
    corpus = _write(tmp_path / "c.jsonl", CLEAN)
    result = CliRunner().invoke(main, ["dedup", str(corpus), "--profile", "ocr"])
    assert result.exit_code == 2
    assert "Invalid value for '--profile'" in result.output
    assert "'clean'" in result.output and "Traceback" not in result.output


def test_profile_on_a_method_it_does_not_change_is_refused_but_clean_is_not():
    with pytest.raises(ParameterError, match="parameter 'profile' applies to method="):
        neardup.dedup(CLEAN, method="exact", profile="noisy")
    assert neardup.dedup(CLEAN, method="exact", profile="clean").params["profile"] == "clean"


def _write(path, texts):
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                            for i, t in enumerate(texts)))
    return path


def _cli_report(tmp_path, texts, *args) -> tuple[dict, str]:
    corpus = _write(tmp_path / "c.jsonl", texts)
    report = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["dedup", str(corpus), "--id-field", "id", "--report",
                                       str(report), *args], terminal_width=400)
    assert result.exit_code == 0, result.output
    record = json.loads(report.read_text())
    report.unlink()
    return record, " ".join(result.output.split())


@pytest.mark.parametrize(("args", "shingle", "threshold"), [
    (["--profile", "noisy"], {"unit": "char", "n": 5}, 0.3),
    (["--profile", "noisy", "--threshold", "0.6"], {"unit": "char", "n": 5}, 0.6),
    (["--profile", "noisy", "--shingle", "word"], {"unit": "word", "n": 3}, 0.3),
    (["--profile", "noisy", "--ngram", "7"], {"unit": "char", "n": 7}, 0.3),
    (["--profile", "clean"], {"unit": "word", "n": 3}, 0.5),
    (["--profile", "auto"], {"unit": "word", "n": 3}, 0.5),
    ([], {"unit": "word", "n": 3}, 0.5),
])
@pytest.mark.parametrize("method", sorted(NOISY))
def test_cli_profile_and_explicit_flags(tmp_path, method, args, shingle, threshold):
    record, _ = _cli_report(tmp_path, CLEAN, "--method", method, *args)
    assert record["params"]["method"]["shingle"] == shingle
    assert record["params"]["method"]["threshold"] == threshold
    assert record["params"]["profile"] == (args[1] if args[1:] != ["auto"] and args else "clean")


def test_help_names_the_profiles():
    text = " ".join(CliRunner().invoke(main, ["dedup", "--help"]).output.split())
    assert "--profile [auto|clean|noisy]" in text
    assert "character 5-grams at Jaccard 0.3" in text


@pytest.mark.parametrize("method", sorted(NOISY))
def test_cli_auto_chooses_from_the_input_and_says_so(tmp_path, method):
    noisy, output = _cli_report(tmp_path, NOISY_TEXTS, "--method", method)
    assert noisy["params"]["method"]["shingle"] == {"unit": "char", "n": 5}
    assert noisy["params"]["profile"] == "noisy"
    assert noisy["params"]["profile_auto"]["sample_docs"] == len(NOISY_TEXTS)
    assert "profile auto chose noisy" in output
    assert not any("profile auto" in hint for hint in noisy["hints"])  # a fact, not advice
    # Real OCR has no broken tokens; the stuck punctuation it makes is enough.
    ocr, output = _cli_report(tmp_path, OCR_TEXTS, "--method", method)
    assert ocr["params"]["profile"] == "noisy" and "punctuation stuck between letters" in output
    clean, output = _cli_report(tmp_path, CLEAN, "--method", method)
    assert clean["params"]["profile"] == "clean" and "profile auto chose clean" in output
    assert not any("--profile noisy (" in hint for hint in clean["hints"])


def test_cli_eval_and_index_resolve_auto(tmp_path):
    labelled = tmp_path / "l.jsonl"
    labelled.write_text("".join(json.dumps({"id": str(i), "text": t, "cluster": i % 4})
                                + "\n" for i, t in enumerate(NOISY_TEXTS + NOISY_TEXTS)))
    result = CliRunner().invoke(main, ["eval", str(labelled), "--method", "minhash", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["profile"]["name"] == "noisy" and report["params"]["shingle"]["unit"] == "char"
    # An index fixes its settings before it holds a document: auto is clean there.
    result = CliRunner().invoke(main, ["index", "create", str(tmp_path / "ix"),
                                       "--method", "minhash"])
    assert result.exit_code == 0, result.output


def test_hint_on_noisy_input_with_the_clean_profile_named(tmp_path):
    noisy, output = _cli_report(tmp_path, NOISY_TEXTS, "--method", "minhash", "--profile", "clean")
    assert any("--profile noisy" in hint for hint in noisy["hints"])
    assert "--profile noisy" in output
    clean, output = _cli_report(tmp_path, CLEAN, "--method", "minhash", "--profile", "clean")
    assert not any("--profile" in hint for hint in clean["hints"])
    assert "--profile" not in output
    # Real OCR has no broken tokens; the stuck punctuation it makes is enough.
    ocr, output = _cli_report(tmp_path, OCR_TEXTS, "--method", "ngram", "--profile", "clean")
    assert any("--profile noisy" in hint for hint in ocr["hints"])
    assert "punctuation stuck between letters" in output and "--profile noisy" in output
    # Named already, chosen by auto, or the method is not one it changes: no hint.
    for args in (["--method", "minhash", "--profile", "noisy"], ["--method", "minhash"],
                 ["--method", "exact"]):
        record, output = _cli_report(tmp_path, NOISY_TEXTS, *args)
        assert not any("--profile noisy (" in hint for hint in record["hints"]), args


def test_noise_signal():
    assert broken_token_share([]) == 0.0
    assert broken_token_share(CLEAN) == 0.0
    assert broken_token_share(["Цены на нефть выросли в понедельник, сообщил министр."]) == 0.0
    assert broken_token_share(["Ο υπουργός είπε ότι οι τιμές αυξήθηκαν."]) == 0.0
    # Codes and numbers next to words are not noise; digits inside words and mixed
    # scripts are.
    assert broken_token_share(["Q1 profit of 4.5 mln dlrs on 1987 sales, F-16 order"]) == 0.0
    assert broken_token_share(["c0mpany"]) == 1.0
    assert broken_token_share(["Рresident said"]) == 0.5  # Cyrillic Р, then Latin
    assert looks_noisy(NOISY_TEXTS) and not looks_noisy(CLEAN)
    assert broken_token_share(NOISY_TEXTS) > BROKEN_TOKEN_SHARE


def test_stuck_punctuation_share():
    assert stuck_punctuation_share([]) == 0.0
    # Abbreviations, numbers, addresses, paths, code, the gender colon, dotted names,
    # lists, and text in scripts without spaces are not stuck punctuation.
    for text in CLEAN + CLEAN_WITH_MARKS:
        assert stuck_punctuation_share([text]) == 0.0, text
    assert not looks_noisy(CLEAN_WITH_MARKS)
    # One mark between two words (two letters or more each side) is, in any
    # alphabetic script; a word counts once (the share is per token: "kdy.je" is two).
    assert stuck_punctuation_share(["kdy.je de:la"]) == 0.5
    assert stuck_punctuation_share(["выпо.лнение"]) == 0.5
    assert stuck_punctuation_share(["ποσοσ;τό"]) == 0.5
    assert stuck_punctuation_share(["Grupp!ennam?en"]) == 1 / 3
    shares = noise_shares(OCR_TEXTS)
    assert shares.broken_tokens == 0.0 < BROKEN_TOKEN_SHARE < shares.stuck_punctuation
    assert shares.stuck_punctuation > STUCK_PUNCTUATION_SHARE and looks_noisy(OCR_TEXTS)
