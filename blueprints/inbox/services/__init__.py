"""The inbox's rules, one module per subject; views and jobs call these functions only."""
