"""Latency recording, intervals, timelines, merging and the phase summary; pure."""
