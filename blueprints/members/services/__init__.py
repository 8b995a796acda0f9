"""The rules of the members area, one module per subject. Functions take the caller's organization id
and plain values (or dicts of the fields sent) and return rows or small dataclasses, never wire dicts.
Mutating ones change and flush rows and publish their domain events; they never commit: the caller's
unit of work does (``core.uow``: the API boundary, ``in_environment`` for jobs, sockets and the CLI)."""
