"""The CRM's rules, one module per resource family. Functions take the caller's organization id and
plain values (or a small filter dataclass), never the Flask request or an API model, and return ORM rows
or small dataclasses. Writing functions change rows, flush and publish events; the boundary (the API
request, a job, a CLI command) commits once (``core.uow``)."""
