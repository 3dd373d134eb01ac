"""Label values from trainer keys: no control or format characters reach a label."""
import unicodedata

import pytest

from exporter.catalog.resolve import sanitize_label_value


@pytest.mark.parametrize("ch", ["\u202e", "\u200b", "\u2066", "\ufeff", "\u0085", "\u2028",
                                "\x00", "\n"])
def test_bidi_format_and_control_characters_are_replaced(ch):
    v = sanitize_label_value(f"ds{ch}evil")
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in v), repr(v)
    assert v.startswith("ds_evil~")  # replaced, and a hash keeps distinct inputs distinct


def test_printable_unicode_is_kept():
    assert sanitize_label_value("gsm8k/数学/ünï") == "gsm8k/数学/ünï"
