"""The games as a dataset: `python -m pipeline export --out DIR` writes every benchmark's games and
model calls as Parquet with a dataset card (build.py; the tables in schemas.py, the card in card.py,
secrets removed by scrub.py). Each benchmark supplies its rows through its declaration's `dataset`
(pipeline/core/artifacts/dataset.py); `publish --dataset` puts the export in a published version."""
