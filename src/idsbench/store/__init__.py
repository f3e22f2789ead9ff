"""Results layout: one directory per campaign, per case and per sample; atomic writes."""
