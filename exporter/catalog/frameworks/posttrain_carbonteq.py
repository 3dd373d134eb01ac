"""posttrain_carbonteq vocabulary (to be filled from ../../../shared/research/framework-keys.json)."""
from ..model import Vocabulary

VOCABULARY = Vocabulary(name="posttrain_carbonteq", title="posttrain_carbonteq")
