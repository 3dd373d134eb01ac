"""areal vocabulary (to be filled from ../../../shared/research/framework-keys.json)."""
from ..model import Vocabulary

VOCABULARY = Vocabulary(name="areal", title="areal")
