"""One package per area of the service specification."""
