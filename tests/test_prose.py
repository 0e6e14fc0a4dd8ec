"""Prose rendered from values: fields filled, mistakes named."""

import math

import pytest

from topofl_lib.prose import Rendered, render


def test_render_fills_fields_with_their_formats():
    text = render("{a:.2f} and {b:+.1f}% over {n} seeds", a=0.8456, b=-2.04, n=3)
    assert text == "0.85 and -2.0% over 3 seeds" and isinstance(text, Rendered)
    assert text._repr_markdown_() == text
    assert render("{x:.3f}", x=math.nan) == "n/a"


@pytest.mark.parametrize("template, values, message", [
    ("{a} {b}", {"a": 1}, r"without a value: \['b'\]"),
    ("{a}", {"a": 1, "c": 2}, r"does not use: \['c'\]"),
    ("{0}", {}, "must be names"),
])
def test_render_names_every_mismatch(template, values, message):
    with pytest.raises(ValueError, match=message):
        render(template, **values)
    with pytest.raises(TypeError, match="template must be a str"):
        render(3)
