"""Cross-cutting pieces that every area uses and no area owns."""
