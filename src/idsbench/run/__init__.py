"""Running a campaign: preflight checks, then one sample at a time, results written as they finish."""
