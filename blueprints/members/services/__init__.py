"""The rules of the members area, one module per subject. Functions take the caller's organization id
and plain values; mutating ones commit and publish their domain events before the commit."""
