"""Run every benchmark: ``python -m bench [name ...]``."""

from __future__ import annotations

import sys

from bench import api_auth, crm_pipeline, growth, inbox_list, inbox_pages, ingest, single_get, startup

BENCHMARKS = {
    "startup": startup.main,
    "api_auth": api_auth.main,
    "inbox_list": inbox_list.main,
    "inbox_pages": inbox_pages.main,
    "crm_pipeline": crm_pipeline.main,
    "single_get": single_get.main,
    "ingest": ingest.main,
    "growth": growth.main,
}


def main(argv: list[str]) -> None:
    names = argv or list(BENCHMARKS)
    for name in names:
        print(f"== {name}")
        BENCHMARKS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
