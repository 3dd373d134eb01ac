"""A simulated RL run for the cadence matrix (exporter/alerts/cadence.py): the healthy run's values
(healthy.py), pathologies as edits of them (pathology.py), and the run turned into scrape samples
(run.py)."""
