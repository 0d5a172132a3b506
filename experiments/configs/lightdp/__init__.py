"""LightDP-FL experiment configs (arXiv 2412.06120)."""
