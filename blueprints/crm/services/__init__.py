"""The CRM's rules, one module per resource family. Functions take the caller's organization id and
plain values, never the Flask request; mutating functions commit once and publish their events."""
