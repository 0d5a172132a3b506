"""Configs of the gossip-DP reproduction (Koskela & Kulkarni 2025); see ``_common.py``."""
