"""posttrain vocabulary (to be filled from ../../../shared/research/framework-keys.json)."""
from ..model import Vocabulary

VOCABULARY = Vocabulary(name="posttrain", title="posttrain")
