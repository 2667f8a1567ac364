"""The key of blinding's keyed labels (issue #31, seed 001), one row: key_hex.

A name repair/labels.toml does not list is labelled model-<first 8 hex of sha256(key_hex ":" name)>
(macro repair_label, as argusic.repair.labels.hashed_label). The key comes from
argusic.repair.labels.label_key (ARGUSIC_LABEL_KEY, else <runs dir>/.keys/repair-label.key), in
Python, so that it is never written into compiled SQL, dbt's logs or the repository. It lives in the
intermediate schema, beside a raw layer that holds the names anyway; no mart, page or export carries
it, and it is not the key that masks published item ids.
"""

import pandas as pd


def model(dbt, session):
    dbt.config(materialized="table")
    from argusic.repair.labels import label_key

    return pd.DataFrame({"key_hex": [label_key().hex()]})
