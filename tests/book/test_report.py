"""companion.report: the book's one number format, verdict badges, tables and downloads."""

import base64
import csv
import io
import json
import math
import re

import numpy as np
import pytest
from IPython.core.formatters import format_display_data

from companion import report
from recency_lib import SimConfig, simulate

# -- numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mean, se, text",
    [
        (0.52314, 0.00123, "0.5231 ± 0.0012"),  # leading digits 123: two significant digits
        (0.5545, 0.00029, "0.55450 ± 0.00029"),
        (0.5, 0.0004, "0.5000 ± 0.0004"),  # 400: one digit
        (0.5, 0.0096, "0.500 ± 0.010"),  # 960: rounds up to 0.010, two digits
        (1.0, 0.96, "1.0 ± 1.0"),
        (12.3456, 0.25, "12.35 ± 0.25"),
        (3.5, 12.0, "4 ± 12"),
        (7.2e-5, 8e-6, "(7.2 ± 0.8) × 10⁻⁵"),  # below 10⁻³: a shared power of ten
        (123456.0, 789.0, "(1.235 ± 0.008) × 10⁵"),  # from 10⁵ up as well
        (-0.00312, 0.0004, "−0.0031 ± 0.0004"),  # Unicode minus
    ],
)
def test_pm_rounds_the_error_and_the_mean_together(mean, se, text):
    assert report.pm(mean, se) == text


def test_pm_special_values():
    assert report.pm(2.0, 0.0) == "2"  # exact: the number alone
    assert report.pm(8.0, 1.4e-15) == "8"  # float rounding is not an error bar
    assert report.is_exact(8.0, 1e-12) and not report.is_exact(8.0, 1e-6)
    assert (
        report.pm(-3.08e-10, 1.0e-9) == "(−0.3 ± 1.0) × 10⁻⁹"
    )  # tiny, yet noise: keeps its error bar
    assert report.pm(0.5, 0.02, min_places=4) == "0.5000 ± 0.0200"
    assert report.pm(np.float64(0.5), np.float32(0.01)) == "0.500 ± 0.010"
    assert report.pm(math.nan, 0.1) == "nan"
    assert report.pm(0.5, math.nan) == "0.5 ± ?" and report.pm(0.5, math.inf) == "0.5 ± ∞"


@pytest.mark.parametrize(
    "x, text",
    [
        (0.0312, "0.0312"),
        (8.0, "8"),
        (64.0, "64"),
        (12345.6, "12346"),
        (0.0, "0"),
        (1 / 3, "0.333"),
        (1.2e-7, "1.20 × 10⁻⁷"),
        (-2.5e-9, "−2.50 × 10⁻⁹"),
        (3.4e5, "3.40 × 10⁵"),
        (math.inf, "∞"),
    ],
)
def test_num(x, text):
    assert report.num(x) == text


def test_counts_percent_z():
    assert report.count(100_000) == "100,000"
    assert report.percent(0.05) == "5 %" and report.percent(0.0534) == "5.3 %"
    assert (
        report.z_text(3.21) == "+3.2"
        and report.z_text(-0.04) == "0.0"
        and report.z_text(-12.3) == "−12"
    )
    assert report.z_text(math.inf) == "+∞"
    assert report.zscore(1.0, 0.5, 0.5) == 1.0 and report.zscore(1.0, 0.0, 0.5) == math.inf
    assert report.zscore(0.5, 0.0, 0.5) == 0.0
    assert report.zdiff(1.0, 0.3, 0.5, 0.4) == pytest.approx(1.0)
    assert report.listing([0.2, 0.4, 0.6]) == "0.2, 0.4 and 0.6" and report.listing([]) == "none"
    assert report.listing([0.2]) == "0.2"


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.3, "0.3 s"),
        (42, "42 s"),
        (210, "3.5 min"),
        (22_000, "6.1 h"),
        (5e5, "5.8 days"),
        (90_000, "1 day"),
        (1.2e5, "1.4 days"),
        (3.3e7, "1 year"),
        (5e8, "16 years"),
        (math.inf, "\u221e"),
    ],
)
def test_duration(seconds, text):
    assert report.duration(seconds) == text


def test_score_label_is_real_math():
    assert report.score_label(2) == "$S^{(2)}$"
    assert report.score_label(2, 10, 1) == "$S^{(2)}_{10,1}$"


def test_badges_by_first_word():
    assert report.badge("holds") == "{bdg-success}`holds`"
    assert report.badge("holds after correction") == "{bdg-success-line}`holds after correction`"
    assert report.badge("contradicted") == "{bdg-danger}`contradicted`"
    assert report.badge("open") == "{bdg-secondary}`open`"
    assert (
        report.badge("holds; too small") == "{bdg-success-line}`holds\\; too small`"
    )  # not a tooltip


# -- tables ----------------------------------------------------------------------------------------


def test_table_is_a_pipe_table_without_index_and_numbers_right_aligned():
    t = report.table(
        [
            {"quantity": "$S^{(2)}_{10,1}$", "value": report.pm(0.5, 0.01), "note": "a|b"},
            {"quantity": "RP", "value": report.pm(0.7, 0.001), "note": "x"},
        ]
    )
    lines = t.text.splitlines()
    assert lines[0] == "| quantity | value | note |"
    assert lines[1] == "|:---|---:|:---|"
    assert lines[2] == "| $S^{(2)}_{10,1}$ | 0.500 ± 0.010 | a\\|b |"  # the pipe is escaped
    assert t._repr_markdown_() == t.text and len(lines) == 4


def test_table_from_columns_and_explicit_alignment():
    t = report.table({"a": ["x", "y"], "b": [1.5, 2.0]}, align="lc")
    assert t.text.splitlines()[1] == "|:---|:---:|"
    assert "| y | 2 |" in t.text
    with pytest.raises(ValueError, match="line break"):
        report.table([{"a": "x\ny"}])
    styled = report.table({"a": ["x"]}, css_class="verdict-table").text
    assert styled.startswith(":::{table}\n:class: verdict-table\n\n| a |") and styled.endswith(
        ":::"
    )


def test_long_table_becomes_summary_dropdown_and_download():
    rows = [{"k": str(i), "v": report.pm(i, 0.1)} for i in range(30)]
    with pytest.raises(ValueError, match="longer than max_rows=20; allowed: pass name="):
        report.table(rows)
    t = report.table(rows, summary=[{"k": "all", "v": "30 rows"}], name="long")
    first, rest = t.text.split(":::{dropdown}", 1)
    assert "| all | 30 rows |" in first and "| 29 |" not in first
    assert rest.startswith(" Full table (30 rows)") and "| 29 | 29.00 ± 0.10 |" in rest
    assert 'download="long.csv"' in rest and rest.rstrip().endswith(":::")


# -- downloads -------------------------------------------------------------------------------------


def _decode(link: str, name: str) -> str:
    href = re.search(rf'download="{re.escape(name)}" href="([^"]+)"', link).group(1)
    head, payload = href.split(",", 1)
    assert head.startswith("data:") and head.endswith(";base64")
    return base64.b64decode(payload).decode()


def test_download_embeds_csv_and_json():
    data = {"x": [1, 2, 3], "mean": [0.5, np.float64(0.25), math.nan], "label": ["a", "b", "c"]}
    shown = report.download("fig-1", data)
    link = shown.text
    assert link.startswith('<span class="data-downloads">Data: ')
    # glued as HTML ({glue}), never as Markdown; its text form names the files, not their bytes
    bundle, _ = format_display_data(shown)
    assert bundle == {"text/html": link, "text/plain": "Data: fig-1.csv · fig-1.json"}
    rows = list(csv.reader(io.StringIO(_decode(link, "fig-1.csv"))))
    assert (
        rows[0] == ["x", "mean", "label"]
        and rows[2] == ["2", "0.25", "b"]
        and rows[3] == ["3", "", "c"]
    )
    js = json.loads(_decode(link, "fig-1.json"))
    assert js["name"] == "fig-1" and js["columns"] == ["x", "mean", "label"]
    assert js["data"][0] == [1, 0.5, "a"] and js["data"][2][1] is None


def test_download_keeps_full_precision_and_refuses_a_large_page():
    link = report.download("p", {"v": [1 / 3, math.inf]}).text
    assert _decode(link, "p.csv").splitlines()[1:] == [repr(1 / 3), "inf"]
    with pytest.raises(ValueError, match="at most"):
        report.download("big", {"v": np.zeros(400_000)})


def test_result_columns_hold_every_plotted_number():
    res = simulate(SimConfig(alpha=0.5, n=4, d=8, layers=2, samples=200, seed=1))
    cols = report.result_columns([res], ["LN"])
    k = 2 * (1 + 10)  # per layer: one RP row and n(n+1)/2 = 10 score rows
    assert all(len(v) == k for v in cols.values())
    rp = [i for i, q in enumerate(cols["quantity"]) if q == "recency_probability"]
    assert [cols["mean"][i] for i in rp] == list(res.recency_probability)
    i = next(
        i for i in range(k) if cols["layer"][i] == 2 and cols["i"][i] == 4 and cols["j"][i] == 1
    )
    assert cols["mean"][i] == res.score_mean[1, 3, 0] and cols["se"][i] == res.score_sem[1, 3, 0]
    assert set(cols["alpha"]) == {0.5} and set(cols["setting"]) == {"LN"}
    only = report.result_columns([res], ["x"], matrices=False)
    assert only["quantity"] == ["recency_probability"] * 2 and only["layer"] == [1, 2]


def test_curve_columns():
    cols = report.curve_columns(
        {"a": ([1, 2], [0.1, 0.2], [0.01, 0.02]), "b": ([1, 2], [1.0, 2.0], None)}, "j"
    )
    assert cols["series"] == ["a", "a", "b", "b"] and cols["j"] == [1.0, 2.0, 1.0, 2.0]
    assert math.isnan(cols["se"][2])


def test_source_shows_library_code():
    from recency_lib import model

    text = report.source(model.layer).text
    assert (
        text.startswith("`recency_lib.model.layer`")
        and "def layer(" in text
        and "````python" in text
    )


def test_nowrap_keeps_a_number_on_one_line():
    text = report.pm(7.2e-5, 8e-6)
    assert " " not in report.nowrap(text) and report.nowrap(text).replace("\u00a0", " ") == text


def test_glue_numbers_glues_every_key_without_display(monkeypatch):
    import myst_nb

    calls = []
    monkeypatch.setattr(
        myst_nb, "glue", lambda key, value, display=True: calls.append((key, value, display))
    )
    report.glue_numbers({"ch-a": "1.0 ± 0.1", "ch-b": "42"})
    assert calls == [("ch-a", "1.0 ± 0.1", False), ("ch-b", "42", False)]
