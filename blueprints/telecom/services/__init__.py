"""The telecom rules: plain functions over the session, called by the API (and later the desk pages)."""
