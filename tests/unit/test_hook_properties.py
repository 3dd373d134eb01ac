"""Property-based tests of the frame path: whatever a trainer hands log(), the
caller never sees an exception, the exposition stays valid, and every frame
and value is accounted for."""
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from exporter import Exporter
from exporter.catalog import CATALOG
from exporter.testing import scrape

KNOWN = ["actor/pg_clipfrac", "actor/pg_loss", "critic/score/mean", "critic/score/max",
         "timing_s/gen", "timing_per_token_ms/ref", "perf/max_memory_allocated_gb",
         "val-core/openai/gsm8k/acc/mean@1", "training/global_step"]

keys = st.one_of(st.sampled_from(KNOWN), st.text(max_size=300))
scalars = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-(10**400), max_value=10**400),
    st.booleans(), st.none(), st.text(max_size=20))
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=5), scalars,
                                                                           max_size=2))
frames = st.one_of(st.dictionaries(keys, values, max_size=40), scalars, st.lists(scalars, max_size=3))

EX = Exporter(run="prop", framework="verl", serve=False, fallback_limit=50)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(frames, min_size=1, max_size=5))
def test_log_never_raises_and_exposition_stays_valid(batch):
    before = EX.stats()["frames_received"]
    for frame in batch:
        EX.log(frame)
    assert EX.flush()
    text = generate_latest(EX.registry).decode()
    families = list(text_string_to_metric_families(text))  # parses
    assert len({f.name for f in families}) == len(families)  # no duplicate families
    assert EX.stats()["frames_received"] - before == len(batch)
    # every frame handed to log() is processed or dropped with a counted reason
    st = EX.stats()
    dropped = st["frames_dropped"]
    assert st["frames_processed"] + dropped.get("not_a_mapping", 0) + dropped.get("queue_full", 0) \
        == st["frames_received"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KNOWN[:-1]), st.floats(allow_nan=True, allow_infinity=True))
def test_a_known_key_lands_on_its_canonical_series_with_its_value(key, v):
    EX.log({key: v})
    r = CATALOG.resolve(key, "verl")
    got = scrape(EX)[(r.metric.name, r.labels)]
    want = v * r.scale
    assert (math.isnan(got) and math.isnan(want)) or got == want
