"""Run every benchmark: ``python -m bench [name ...]``."""

from __future__ import annotations

import sys

from bench import (
    api_auth,
    crm_pipeline,
    deal_pages,
    growth,
    inbox_list,
    inbox_pages,
    ingest,
    single_get,
    startup,
    ticket_pages,
)

BENCHMARKS = {
    "startup": startup.main,
    "api_auth": api_auth.main,
    "inbox_list": inbox_list.main,
    "inbox_pages": inbox_pages.main,
    "crm_pipeline": crm_pipeline.main,
    "deal_pages": deal_pages.main,
    "ticket_pages": ticket_pages.main,
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
