"""docs/vocabulary.md is generated from the catalog and must be current."""
from exporter.catalog.vocabulary_doc import DOC, render


def test_committed_vocabulary_doc_is_generated():
    assert DOC.read_text() == render(), \
        "docs/vocabulary.md is stale: run python -m exporter.catalog.vocabulary_doc"


def test_doc_lists_renames_and_release_ranges():
    text = DOC.read_text()
    assert "## Renamed in this release" in text
    assert "| `rl_kl_loss` | `rl_reference_kl` |" in text
    assert "| `rl_mfu_ratio` | verl | `mfu/actor` |" in text
