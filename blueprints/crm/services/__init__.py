"""The CRM's verbs, one module per resource family. Functions take the caller's organization id and
plain values or typed inputs (``drafts.py``: a draft, a set of changes, a list's filters), never the
Flask request, an API model or a dict, check them by the area's rules (``rules.py``) and refuse with a
coded ``rules.Refusal``; they return ORM rows or small dataclasses. Writing functions change rows, flush
and publish events; the boundary (the API request, a job, a CLI command) commits once (``core.uow``)."""
